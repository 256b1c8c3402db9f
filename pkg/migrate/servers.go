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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/transport"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
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
//
// Switched means serving the CRD generation the pass's proofs were made
// on: its storage version (storageVersionHash in the server's discovery)
// and its schemas and conversion (the generation in the server's own cache
// of the CRD), since a server a schema hotfix behind stores at the same
// version under another schema.
type switchedServers struct {
	c          cluster.Clients
	crd        string
	uid        types.UID
	generation int64
	group      string
	version    string
	plural     string
	want       string
	timeout    time.Duration

	mu sync.Mutex
	// since is when each server showed the switch, from when its answers
	// count; notYet are the servers seen not switched.
	since  map[transport.Server]time.Time
	notYet map[transport.Server]bool
	// asked is when every server was last asked anew.
	asked time.Time
	// notify, when set, hears what the servers' answers make the pass
	// wait for.
	notify func(string)
	// untold: an answer did not tell its server (plain HTTP, clients not
	// spread over connections): servers cannot be told apart, so the pass
	// keeps to none and relies on the switch check and the grace.
	untold atomic.Bool
	// moved: a server serves a newer generation of the CRD than the one
	// proven: the CRD changed, and what was proven is not what it is.
	moved atomic.Bool
	// shared: one certificate answered both as switched and as not, in
	// one round of asking or after it had shown the switch: several API
	// servers answer behind it (a TLS-terminating balancer or proxy, a
	// managed control plane), and no answer tells which.
	shared atomic.Bool
}

// agreeingRounds is how many rounds of asking in a row must find every
// answer switched before servers behind one certificate count as switched.
const agreeingRounds = 3

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
	return &switchedServers{c: c, crd: crd.Name, uid: crd.UID, generation: crd.Generation, group: crd.Spec.Group, version: storage, plural: crd.Spec.Names.Plural,
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
	seen := &results.APIServers{Switched: len(s.since), Untold: s.untold.Load(), SharedCertificate: s.shared.Load()}
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
			if _, _, err := s.show(ctx, route.Probe()); err != nil {
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
		if _, _, err := s.show(ctx, route.Probe()); err != nil {
			return 0, err
		}
		again = true
	}
	return 0, fmt.Errorf("answered %d times by API servers not shown to store at %s: not counted", maxShows, s.version)
}

// showAll asks every server the objects' connections reach, before the
// pass, so that its first answers count. Where none of their answers tells
// its server (plain HTTP, clients not built by NewClients), servers cannot
// be told apart: the pass keeps to none of them. It reports whether every
// answer of this round showed the switch.
func (s *switchedServers) showAll(ctx context.Context) (bool, error) {
	var (
		g    errgroup.Group
		told atomic.Bool
		mu   sync.Mutex
		// answers are this round's, per server: switched, not switched.
		answers = map[transport.Server][2]bool{}
	)
	for i := range max(s.c.Connections, 1) {
		g.Go(func() error {
			// One request alone first, as requests in parallel on a
			// connection not open yet may each open one: the CRD as the
			// server serves it, whose answer alone can show a server behind.
			opened := transport.RouteOn(i)
			m, err := s.c.CRDAsServed(ctx, opened, s.crd)
			if errors.Is(err, transport.ErrNoRoutes) {
				return nil
			}
			told.CompareAndSwap(false, opened.Last() != transport.NoServer)
			if err == nil && m.UID == s.uid && m.Generation > s.generation {
				s.moved.Store(true)
			}
			if srv := opened.Last(); srv != transport.NoServer && (apierrors.IsNotFound(err) || (err == nil && s.behind(m))) {
				mu.Lock()
				a := answers[srv]
				a[1] = true
				answers[srv] = a
				mu.Unlock()
			}
			// Then each connection is asked twice at once: behind a balancer
			// that terminates TLS, each request may reach another server.
			var twice errgroup.Group
			for range 2 {
				twice.Go(func() error {
					route := transport.RouteOn(i)
					srv, switched, err := s.show(ctx, route)
					if err != nil {
						return err
					}
					told.CompareAndSwap(false, route.Last() != transport.NoServer)
					if srv != transport.NoServer {
						mu.Lock()
						a := answers[srv]
						a[boolIndex(!switched)] = true
						answers[srv] = a
						mu.Unlock()
					}
					return nil
				})
			}
			return twice.Wait()
		})
	}
	err := g.Wait()
	if !told.Load() {
		s.untold.Store(true)
	}
	all := len(answers) > 0
	for _, a := range answers {
		if a[0] && a[1] {
			// One server does not answer both at once.
			s.shared.Store(true)
		}
		all = all && !a[1]
	}
	return all, err
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// behind says whether a server's CRD is not the one proven: another
// object of the name, or an older generation. A newer one is the CRD
// moving, which the passes watch for themselves.
func (s *switchedServers) behind(m *metav1.PartialObjectMetadata) bool {
	return m.UID != s.uid || m.Generation < s.generation
}

// agree returns once the servers' answers agree that they switched. Where
// one certificate answers for several servers, that takes agreeingRounds
// rounds in a row of every answer switched, up to the switch timeout: until
// then one of them may be behind, and no answer says which.
func (s *switchedServers) agree(ctx context.Context) error {
	all, err := s.showAll(ctx)
	if err == nil && s.moved.Load() {
		return s.movedError()
	}
	if err != nil || !s.shared.Load() {
		return err
	}
	if s.notify != nil {
		s.notify(fmt.Sprintf("%s: API servers answer behind one certificate (a balancer or proxy that terminates TLS), and they disagree whether they serve generation %d of the CRD: nothing is written until every answer agrees, %d rounds in a row (up to %s)",
			s.crd, s.generation, agreeingRounds, s.timeout))
	}
	deadline := time.Now().Add(s.timeout)
	for rounds := boolIndex(all); rounds < agreeingRounds; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: API servers answering behind one certificate disagree whether they serve %s generation %d (stored at %s) after %s: one of them is behind, and no answer tells which; no object was written",
				ErrSwitchNotInEffect, s.crd, s.generation, s.version, s.timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(askAgainEvery):
		}
		if all, err = s.showAll(ctx); err != nil {
			return err
		}
		if s.moved.Load() {
			return s.movedError()
		}
		rounds = (rounds + 1) * boolIndex(all)
	}
	return nil
}

// errCRDMoved: an API server serves a newer generation of the CRD than the
// one the work was proven on.
var errCRDMoved = errors.New("the CRD changed")

func (s *switchedServers) movedError() error {
	return fmt.Errorf("%w: an API server serves a newer generation of %s than %d, the one proven: no object was written", errCRDMoved, s.crd, s.generation)
}

// stillAgree reports, where one certificate answers for several servers,
// whether every answer of agreeingRounds rounds still shows the switch: a server behind may have
// answered for an object during the pass, and a prune on its word would
// leave that object at a version storedVersions no longer names.
func (s *switchedServers) stillAgree(ctx context.Context) bool {
	if s == nil || !s.shared.Load() {
		return true
	}
	for range agreeingRounds {
		if all, err := s.showAll(ctx); err != nil || !all || s.moved.Load() {
			return false
		}
	}
	return true
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
	_, err := s.showAll(ctx)
	return err
}

// show asks the server behind route, on the route's connection, which
// version it stores the resource at and which generation of the CRD it
// serves, and says which server answered and whether it has switched.
func (s *switchedServers) show(ctx context.Context, route *transport.Route) (transport.Server, bool, error) {
	var (
		hash, served string
		gen          int64
		herr, cerr   error
		both         errgroup.Group
	)
	// Both on the route's connection at once: one round trip.
	both.Go(func() error {
		hash, herr = s.c.StorageVersionHash(ctx, route, s.group, s.version, s.plural)
		return nil
	})
	both.Go(func() error {
		m, err := s.c.CRDAsServed(ctx, route, s.crd)
		if cerr = err; err == nil {
			served, gen = string(m.UID), m.Generation
		}
		return nil
	})
	_ = both.Wait()
	for _, err := range []error{herr, cerr} {
		switch {
		case errors.Is(err, transport.ErrNoRoutes):
			return transport.NoServer, false, err
		case err != nil && !apierrors.IsNotFound(err):
			return transport.NoServer, false, fmt.Errorf("asking an API server whether it serves %s generation %d stored at %s: %w", s.crd, s.generation, s.version, err)
		}
	}
	if cerr == nil && served == string(s.uid) && gen > s.generation {
		s.moved.Store(true)
		return transport.NoServer, false, nil
	}
	switched := hash == s.want && cerr == nil && served == string(s.uid) && gen == s.generation
	behind := !switched
	servers, blind := route.Answered()
	if blind || len(servers) != 1 {
		// No answer, or two servers answered the two questions.
		return transport.NoServer, false, nil
	}
	srv := servers[0]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, shown := s.since[srv]; shown && behind {
		// A server does not go back to an older CRD: several answer here.
		s.shared.Store(true)
	}
	if switched {
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
	return srv, switched, nil
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
	for agreed := 0; ; {
		all, err := s.showAll(ctx)
		if err != nil {
			return err
		}
		if s.moved.Load() {
			return s.movedError()
		}
		agreed = (agreed + 1) * boolIndex(all)
		seen := s.seen()
		if s.untold.Load() || (seen.NotSwitched == 0 && seen.Switched > 0 && !s.shared.Load()) || (s.shared.Load() && agreed >= agreeingRounds) {
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
