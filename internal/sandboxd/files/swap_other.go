//go:build !linux

package files

// install moves the finished temporary file tmpBase over base, both in
// resolved directory dir, atomically.
func (r *Root) install(dir, tmpBase, base string) error {
	return r.root.Rename(childName(dir, tmpBase), childName(dir, base))
}
