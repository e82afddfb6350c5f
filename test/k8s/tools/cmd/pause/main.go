// Command pause holds a Pod sandbox open for the real-node suite's containerd: it is the CRI
// sandbox image's only file, since no image registry can be reached. It waits until SIGINT or
// SIGTERM and exits 0; as the sandbox's first process it reaps any child that ends meanwhile.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
