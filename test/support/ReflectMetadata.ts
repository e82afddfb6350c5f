/**
 * The few `Reflect` metadata functions that `tsyringe` (a dependency of `@peculiar/x509`, which
 * the tests make certificates with) checks for when it loads. `reflect-metadata` is not
 * installed, and x509 only needs metadata storage, so a WeakMap is enough. Import this module
 * before `@peculiar/x509`.
 */
type MetadataKey = unknown
const metadata = new WeakMap<object, Map<MetadataKey, unknown>>()

interface ReflectMetadataApi {
  defineMetadata?: (key: MetadataKey, value: unknown, target: object) => void
  getOwnMetadata?: (key: MetadataKey, target: object) => unknown
  getMetadata?: (key: MetadataKey, target: object) => unknown
  hasOwnMetadata?: (key: MetadataKey, target: object) => boolean
  metadata?: (key: MetadataKey, value: unknown) => (target: object) => void
}

const reflect = Reflect as unknown as ReflectMetadataApi

if (typeof reflect.getMetadata !== "function") {
  const define = (key: MetadataKey, value: unknown, target: object): void => {
    let entries = metadata.get(target)
    if (entries === undefined) {
      entries = new Map()
      metadata.set(target, entries)
    }
    entries.set(key, value)
  }
  reflect.defineMetadata = define
  reflect.getOwnMetadata = (key, target) => metadata.get(target)?.get(key)
  reflect.hasOwnMetadata = (key, target) => metadata.get(target)?.has(key) ?? false
  // Walks the prototype chain, as the real polyfill does for inherited constructor metadata.
  reflect.getMetadata = (key, target) => {
    let current: object | null = target
    while (current !== null) {
      const entries = metadata.get(current)
      if (entries?.has(key)) return entries.get(key)
      current = Object.getPrototypeOf(current) as object | null
    }
    return undefined
  }
  reflect.metadata = (key, value) => (target) => define(key, value, target)
}

export {}
