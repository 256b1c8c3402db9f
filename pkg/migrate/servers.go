package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/transport"
)

// switchedServers are the API servers a pass writes through. Several API
// servers see a CRD update at different moments: until one has, its dry
// run at the old version goes old→old and proves nothing, and its write
// at the new version goes old→new→old and stores at the old version again,
// answering "unchanged". So before the pass each connection's server is
// asked, on that connection, which version it stores at; an object's
// requests then keep to one connection whose server showed the switch,
// never opening a new one (which may reach another server), and count
// only where that server showed it before they were sent. The pass goes
// on without a server not switched yet; where no other is left, every
// server is asked again until one has, up to the switch timeout.
type switchedServers struct {
	c       cluster.Clients
	group   string
	version string
	plural  string
	want    string
	timeout time.Duration

	mu sync.Mutex
	// since is when each server showed the switch, from when its answers
	// count; notYet are the servers seen not switched.
	since  map[transport.Server]time.Time
	notYet map[transport.Server]bool
	// asked is when every server was last asked anew.
	asked time.Time
	// untold: an answer did not tell its server (plain HTTP, clients not
	// spread over connections): servers cannot be told apart, so the pass
	// keeps to none and relies on the switch check and the grace.
	untold atomic.Bool
}

// askAgainEvery is how often the servers are asked again while none the
// connections reach has shown the switch.
const askAgainEvery = 250 * time.Millisecond

// caughtUpMargin is how long after a server that had not switched shows
// it has, its answers still do not count.
const caughtUpMargin = time.Second

// maxShows bounds how often one object is done again because a server
// that answered it had not been shown switched.
const maxShows = 8

func newSwitchedServers(c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, timeout time.Duration) *switchedServers {
	storage := lifecycle.StorageVersion(crd)
	return &switchedServers{c: c, group: crd.Spec.Group, version: storage, plural: crd.Spec.Names.Plural,
		want: storageVersionHash(crd.Spec.Group, storage, crd.Spec.Names.Kind), timeout: timeout,
		since: map[transport.Server]time.Time{}, notYet: map[transport.Server]bool{}}
}

// avoid names the servers not shown switched (yet).
func (s *switchedServers) avoid(srv transport.Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.since[srv]
	return !ok || time.Now().Before(at)
}

// shownBefore reports every server of servers shown switched before t.
func (s *switchedServers) shownBefore(servers []transport.Server, t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, srv := range servers {
		if at, ok := s.since[srv]; !ok || !at.Before(t) {
			return false
		}
	}
	return true
}

// seen says what the pass saw of the servers.
func (s *switchedServers) seen() *results.APIServers {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := &results.APIServers{Switched: len(s.since), Untold: s.untold.Load()}
	for srv := range s.notYet {
		if _, ok := s.since[srv]; !ok {
			seen.NotSwitched++
		}
	}
	return seen
}

// routed runs one object's requests, do, along one route and takes their
// outcome where every server that answered was shown switched before they
// began. Otherwise (a connection opened anew, an answer from a server not
// shown) it asks the server behind the route, and runs do again (again:
// the run before may have written the object, so it is read anew).
func (s *switchedServers) routed(ctx context.Context, do func(ctx context.Context, again bool) (outcome, error)) (outcome, error) {
	if s == nil || s.untold.Load() {
		return do(ctx, false)
	}
	again := false
	var waiting time.Time
	for shows := 0; shows < maxShows; {
		route := transport.NewRoute(s.avoid)
		began := time.Now()
		out, err := do(transport.WithRoute(ctx, route), again)
		switch {
		case errors.Is(err, transport.ErrEveryServerAvoided):
			// Nothing was sent: ask every server again, a while later.
			if waiting.IsZero() {
				waiting = began
			} else if time.Since(waiting) > s.timeout {
				return 0, fmt.Errorf("%w: no API server the connections reach stores %s/%s %s at %s after %s: not written",
					ErrSwitchNotInEffect, s.group, s.version, s.plural, s.version, s.timeout)
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(askAgainEvery):
			}
			if err := s.askAgain(ctx); err != nil {
				return 0, err
			}
			continue
		case errors.Is(err, transport.ErrNewConnection):
			shows++
			if err := s.show(ctx, route.Probe()); err != nil {
				return 0, err
			}
			again = true
			continue
		}
		waiting = time.Time{}
		if servers, blind := route.Answered(); !blind && s.shownBefore(servers, began) {
			return out, err
		}
		shows++
		if err := s.show(ctx, route.Probe()); err != nil {
			return 0, err
		}
		again = true
	}
	return 0, fmt.Errorf("answered %d times by API servers not shown to store at %s: not counted, run again", maxShows, s.version)
}

// showAll asks every server the objects' connections reach, before the
// pass, so that its first answers count. Where none of their answers tells
// its server (plain HTTP, clients not built by NewClients), servers cannot
// be told apart: the pass keeps to none of them.
func (s *switchedServers) showAll(ctx context.Context) error {
	var (
		g    errgroup.Group
		told atomic.Bool
	)
	for i := range max(s.c.Connections, 1) {
		g.Go(func() error {
			route := transport.RouteOn(i)
			err := s.show(ctx, route)
			if errors.Is(err, transport.ErrNoRoutes) {
				return nil
			}
			told.CompareAndSwap(false, route.Last() != transport.NoServer)
			return err
		})
	}
	err := g.Wait()
	if !told.Load() {
		s.untold.Store(true)
	}
	return err
}

// askAgain asks every server anew, at most once an askAgainEvery for every
// object waiting on one.
func (s *switchedServers) askAgain(ctx context.Context) error {
	s.mu.Lock()
	if time.Since(s.asked) < askAgainEvery {
		s.mu.Unlock()
		return nil
	}
	s.asked = time.Now()
	s.mu.Unlock()
	return s.showAll(ctx)
}

// show asks the server behind route, on the route's connection, which
// version it stores the resource at.
func (s *switchedServers) show(ctx context.Context, route *transport.Route) error {
	hash, err := s.c.StorageVersionHash(ctx, route, s.group, s.version, s.plural)
	if errors.Is(err, transport.ErrNoRoutes) {
		return err
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("asking an API server whether it stores at %s: %w", s.version, err)
	}
	srv := route.Last()
	if srv == transport.NoServer {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if hash == s.want {
		if _, ok := s.since[srv]; !ok {
			s.since[srv] = time.Now()
			if s.notYet[srv] {
				// It caught up just now: its discovery is rebuilt from the
				// same informer event as its handler of the objects, and
				// may show the switch a moment before the handler has it.
				s.since[srv] = s.since[srv].Add(caughtUpMargin)
			}
		}
	} else {
		s.notYet[srv] = true
	}
	return nil
}

// everyServerShows waits until every API server the connections reach
// stores the CRD's objects at its storage version, and until the margin of
// the last to catch up has passed. A check after a switch begins, and an
// undo returns, only then: a dry run answered by a server that has not
// switched proves nothing, and a client's write through a server that has
// not seen an undo still stores at the version the check found losing
// data. Where answers do not tell servers apart, discovery's reads
// (waitForSwitch) stand for them.
func everyServerShows(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	s := newSwitchedServers(c, crd, timeout)
	deadline := time.Now().Add(timeout)
	for {
		if err := s.showAll(ctx); err != nil {
			return err
		}
		seen := s.seen()
		if s.untold.Load() || (seen.NotSwitched == 0 && seen.Switched > 0) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d of the %d API servers the connections reach do not store %s at %s after %s",
				ErrSwitchNotInEffect, seen.NotSwitched, seen.NotSwitched+seen.Switched, crd.Name, s.version, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(askAgainEvery):
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(s.settled())):
	}
	return nil
}

// settled is when the last server shown switched counts as switched.
func (s *switchedServers) settled() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last time.Time
	for _, at := range s.since {
		if at.After(last) {
			last = at
		}
	}
	return last
}
