// Command corral is Corral's single binary: the control plane, the
// in-sandbox daemon and the client commands. It only wires; see internal/cli.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/corral-sh/corral/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:])
	stop()
	if err != nil {
		if !cli.Quiet(err) {
			fmt.Fprintln(os.Stderr, "corral:", err)
		}
		os.Exit(cli.ExitCode(err))
	}
}
