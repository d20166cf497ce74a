package sandboxd

// PLACEHOLDER owned by the files helper; replaced wholesale.

import (
	"net/http"

	"github.com/corral-sh/corral/internal/errdefs"
)

type filesAPI struct{}

func newFilesAPI(root string, stopping <-chan struct{}) (*filesAPI, error) { return &filesAPI{}, nil }
func (f *filesAPI) close()                                                  {}

var errFilesPending = errdefs.Unavailablef("files API pending")

func (f *filesAPI) readFile(w http.ResponseWriter, r *http.Request) error   { return errFilesPending }
func (f *filesAPI) writeFile(w http.ResponseWriter, r *http.Request) error  { return errFilesPending }
func (f *filesAPI) deleteFile(w http.ResponseWriter, r *http.Request) error { return errFilesPending }
func (f *filesAPI) stat(w http.ResponseWriter, r *http.Request) error       { return errFilesPending }
func (f *filesAPI) list(w http.ResponseWriter, r *http.Request) error       { return errFilesPending }
func (f *filesAPI) mkdir(w http.ResponseWriter, r *http.Request) error      { return errFilesPending }
func (f *filesAPI) move(w http.ResponseWriter, r *http.Request) error       { return errFilesPending }
func (f *filesAPI) getArchive(w http.ResponseWriter, r *http.Request) error { return errFilesPending }
func (f *filesAPI) putArchive(w http.ResponseWriter, r *http.Request) error { return errFilesPending }
func (f *filesAPI) watch(w http.ResponseWriter, r *http.Request) error      { return errFilesPending }
func (f *filesAPI) search(w http.ResponseWriter, r *http.Request) error     { return errFilesPending }
func (f *filesAPI) edit(w http.ResponseWriter, r *http.Request) error       { return errFilesPending }
