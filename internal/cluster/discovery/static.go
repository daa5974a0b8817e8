package discovery

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// static is a fixed list of members.
type static struct {
	noClose
	members []Member
	spec    string
}

// newStatic parses a comma-separated list of host:port addresses.
func newStatic(target string, opts Options) (*static, error) {
	s := &static{}
	var shown []string
	for i, item := range strings.Split(target, ",") {
		addr, err := hostPort(item, opts.DefaultPort)
		if err != nil {
			return nil, fmt.Errorf("static member %d: %v", i+1, err)
		}
		s.members = append(s.members, Member{ID: addr, Addr: addr})
		shown = append(shown, addr)
	}
	s.members = sortMembers(s.members)
	s.spec = "static:" + strings.Join(shown, ",")
	return s, nil
}

// Members returns the list, sorted by address.
func (s *static) Members(context.Context) ([]Member, error) {
	return slices.Clone(s.members), nil
}

// String returns the spec, with default ports filled in.
func (s *static) String() string { return s.spec }
