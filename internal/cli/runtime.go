//go:build !slim

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/internal/runtime/catalog"
)

// catalogFlags are the flags that configure the runtime backends.
type catalogFlags struct{ cfg catalog.Config }

func (f *catalogFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.cfg.StateRoot, "state-root", catalog.DefaultStateRoot, "directory of the backends' host state (one subdirectory each)")
	fs.BoolVar(&f.cfg.UnsafeLocal, "unsafe-local", false, "allow the local backend, which runs sandboxes without any isolation")
}

func runtimeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "Inspect the runtime backends that run sandboxes",
	}
	var (
		cf     catalogFlags
		asJSON bool
	)
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List every runtime backend, strongest isolation first, and whether it is available here",
		Long: `ls checks every backend Corral knows, strongest isolation first, and shows
whether it can run sandboxes on this host and, if not, why. The first
available one is what Corral picks when no runtime is named.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st := catalog.Probe(cmd.Context(), cf.cfg)
			if asJSON {
				return writeRuntimesJSON(cmd.OutOrStdout(), st)
			}
			return writeRuntimes(cmd.OutOrStdout(), st)
		},
	}
	cf.register(ls)
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(ls)
	return cmd
}

// runtimeRow is a Status as runtime ls shows it: Auto marks the backend
// picked when none is named.
type runtimeRow struct {
	catalog.Status
	Auto bool `json:"auto"`
}

func runtimeRows(st []catalog.Status) []runtimeRow {
	rows := make([]runtimeRow, len(st))
	picked := false
	for i, s := range st {
		rows[i] = runtimeRow{Status: s, Auto: s.Available && !picked}
		picked = picked || s.Available
	}
	return rows
}

func writeRuntimesJSON(w io.Writer, st []catalog.Status) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(runtimeRows(st))
}

func writeRuntimes(w io.Writer, st []catalog.Status) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tISOLATION\tAVAILABLE\tDETAIL")
	for _, r := range runtimeRows(st) {
		avail, detail := "no", r.Reason
		if r.Available {
			avail, detail = "yes", "ready"
			if r.Auto {
				detail = "ready; the default (strongest available)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Isolation, avail, detail)
	}
	return tw.Flush()
}
