/** The figures of one benchmark section: flat, JSON-serialisable. */
export type Figures = Readonly<Record<string, number | string | boolean>>

export interface BenchSection {
  /** The key of this section in the `--json` object. */
  readonly name: string
  readonly run: () => Promise<Figures>
}
