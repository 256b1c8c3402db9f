package migration

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/transport"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// switchedServers are the API servers a pass writes through. Servers see a
// CRD update at different moments, and one that has not yet stores at the old
// version: its dry run proves nothing and its write re-stores nothing. So an
// object's requests keep to one connection whose server showed the switch
// before they were sent. Switched means serving the generation proven: its
// discovery's storage version hash, its CRD's generation, and its handler of
// the objects decoding every field the storage version's schema declares (the
// handler's own answer: a CRD read can come from etcd, not from the handler).
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
	// probe holds every field path of the storage version's schema (JSON), sent
	// to each server's handler as a dry run under probeName, in probeNS.
	probe              []byte
	probeName, probeNS string

	mu sync.Mutex
	// since is when each server showed the switch; notYet are those seen not to.
	since  map[transport.Server]time.Time
	notYet map[transport.Server]bool
	asked  time.Time
	// began is when the pass began (agree returned); lastBehind is when a
	// server whose answers count last answered behind; why, why stillAgree refused.
	began, lastBehind time.Time
	why               string
	// notify, when set, hears what the servers' answers make the pass wait for.
	notify func(string)
	// untold: answers do not tell servers apart, so the pass keeps to none and
	// relies on the switch check and the grace.
	untold atomic.Bool
	// moved: a server serves a newer generation of the CRD than the one proven.
	moved atomic.Bool
	// shared: one certificate answered both switched and not, so several servers
	// answer behind it (a TLS-terminating balancer) and no answer tells which.
	shared atomic.Bool
	// storesOld: a server's discovery answered another storage version's hash.
	storesOld atomic.Bool
	// unasked: a handler could not be asked, said once; probeOff: not asked again this run.
	unasked  sync.Once
	probeOff atomic.Bool
}

// agreeingRounds is the all-switched rounds in a row one certificate must give.
const agreeingRounds = 3

// askAgainEvery is how often servers are asked again while none has switched.
const askAgainEvery = 250 * time.Millisecond

// caughtUpMargin is how long a server that just caught up still does not count.
const caughtUpMargin = time.Second

// maxShows bounds how often one object is done again for a server not shown switched.
const maxShows = 8

func newSwitchedServers(c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, timeout time.Duration) *switchedServers {
	storage := stages.StorageVersion(crd)
	s := &switchedServers{c: c, crd: crd.Name, uid: crd.UID, generation: crd.Generation, group: crd.Spec.Group, version: storage, plural: crd.Spec.Names.Plural,
		want: storageVersionHash(crd.Spec.Group, storage, crd.Spec.Names.Kind), timeout: timeout,
		since: map[transport.Server]time.Time{}, notYet: map[transport.Server]bool{}}
	// A name no object has: the handler decodes the probe, then finds nothing to update.
	s.probeName = "crdversion-switch-probe-" + rand.String(8)
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		s.probeNS = metav1.NamespaceDefault
	}
	s.probe, _ = json.Marshal(schemacompat.EveryFieldObject(crd, storage, s.probeName, s.probeNS))
	return s
}

func (s *switchedServers) avoid(srv transport.Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.since[srv]
	return !ok || time.Now().Before(at)
}

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

func (s *switchedServers) seen() *results.APIServers {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := &results.APIServers{Switched: len(s.since), Untold: s.untold.Load(), SharedCertificate: s.shared.Load()}
	if seen.SharedCertificate {
		seen.AgreeingRounds = agreeingRounds
	}
	for srv := range s.notYet {
		if _, ok := s.since[srv]; !ok {
			seen.NotSwitched++
		}
	}
	return seen
}

// routed runs one object's requests, do, along one route, and takes their
// outcome only where every server that answered was shown switched before;
// otherwise it asks that server and runs do again, reading the object anew.
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

// showAll asks every server the connections reach, before the pass, so its
// first answers count, and reports whether every answer showed the switch.
func (s *switchedServers) showAll(ctx context.Context) (bool, error) {
	var (
		g       errgroup.Group
		told    atomic.Bool
		mu      sync.Mutex
		answers = map[transport.Server][2]bool{}
	)
	for i := range max(s.c.Connections, 1) {
		g.Go(func() error {
			// One request alone first: parallel ones on a new connection may each open one.
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
				s.noteBehind(srv)
				mu.Lock()
				a := answers[srv]
				a[1] = true
				answers[srv] = a
				mu.Unlock()
			}
			// Then two at once: behind a TLS-terminating balancer each may reach another server.
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

// behind: the server's CRD is another of the name, or an older generation.
func (s *switchedServers) behind(m *metav1.PartialObjectMetadata) bool {
	return m.UID != s.uid || m.Generation < s.generation
}

// agree returns once the servers agree they switched; behind one certificate
// that takes agreeingRounds all-switched rounds in a row, up to the timeout.
// The pass begins then: a behind answer after it is held against the prune.
func (s *switchedServers) agree(ctx context.Context) error {
	err := s.agreed(ctx)
	if err == nil {
		s.mu.Lock()
		s.began = time.Now()
		s.mu.Unlock()
	}
	return err
}

func (s *switchedServers) agreed(ctx context.Context) error {
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

// errCRDMoved: an API server serves a newer generation than the one proven.
var errCRDMoved = errors.New("the CRD changed")

func (s *switchedServers) movedError() error {
	return fmt.Errorf("%w: an API server serves a newer generation of %s than %d, the one proven: no object was written", errCRDMoved, s.crd, s.generation)
}

// stillAgree asks every server again before a prune, agreeingRounds rounds
// at once, whatever the certificates looked like: a balancer may have added a
// server mid-pass behind a certificate whose answers counted, and that
// server's "unchanged" is no re-store. It reports false, saying why
// (disagreement), if a server whose answers counted answered behind at any
// time since the pass began (the pass's own answers included): a prune on
// its word could leave an object at a version storedVersions no longer
// names. A server never shown switched decided nothing and does not count.
func (s *switchedServers) stillAgree(ctx context.Context) bool {
	if s == nil {
		return true
	}
	// One round after another: at once, they were a burst a server's priority and fairness
	// throttles (one seat: 429s past client-go's retries).
	s.storesOld.Store(false)
	var err error
	for range agreeingRounds {
		if _, err = s.showAll(ctx); err != nil {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		s.why = fmt.Sprintf("asking every API server again before the prune failed: %v", err)
	case s.storesOld.Load():
		// Every object the pass wrote is at the storage version, but a write through that server
		// now would land at another, which the prune would drop from storedVersions.
		s.why = fmt.Sprintf("asked again before the prune, an API server does not store %s at %s yet: a write through it now would land at a version the prune would drop from storedVersions", s.crd, s.version)
	case s.moved.Load():
		s.why = fmt.Sprintf("asked again before the prune, an API server serves a newer generation of the CRD than %d, the one the pass proved", s.generation)
	case s.lastBehind.After(s.began):
		s.why = fmt.Sprintf("an API server whose answers the pass counted answered, after the pass began, that it does not serve generation %d of the CRD stored at %s (a server a balancer added mid-pass, or several behind one certificate): its \"unchanged\" may be no re-store", s.generation, s.version)
	default:
		return true
	}
	return false
}

// disagreement says why stillAgree refused the prune.
func (s *switchedServers) disagreement() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.why
}

// noteBehind records a behind answer of srv, held against the prune if srv's answers count.
func (s *switchedServers) noteBehind(srv transport.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, shown := s.since[srv]; shown {
		s.lastBehind = time.Now()
	}
}

// askAgain asks every server anew, at most once an askAgainEvery.
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

// show asks the server behind route which version it stores at, which CRD
// generation it serves, and whether its handler decodes every field of that
// generation's storage version; it returns that server (NoServer where the
// answers did not tell one) and whether the answers showed the switch.
func (s *switchedServers) show(ctx context.Context, route *transport.Route) (transport.Server, bool, error) {
	var (
		hash, served     string
		gen              int64
		knows            bool
		herr, cerr, perr error
		both             errgroup.Group
	)
	both.Go(func() error {
		if s.probeOff.Load() {
			knows = true
			return nil
		}
		knows, perr = s.c.HandlerKnowsEveryField(ctx, route, s.group, s.version, s.plural, s.probeNS, s.probeName, s.probe)
		return nil
	})
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
	switch {
	case errors.Is(perr, transport.ErrNoRoutes):
		return transport.NoServer, false, perr
	case apierrors.IsForbidden(perr) || apierrors.IsTooManyRequests(perr):
		// The handler was not asked (no update in the probe's namespace, or throttled past
		// client-go's retries): switched rests on the hash and the CRD read, and the run says so.
		knows = true
		s.probeOff.Store(true)
		s.unasked.Do(func() {
			if s.notify != nil {
				s.notify(fmt.Sprintf("%s: an API server's handler of %s could not be asked whether it knows every field of %s generation %d (%v): whether a server serves this generation rests on its discovery and its read of the CRD, which a server whose watch is behind can answer for it",
					s.crd, s.plural, s.version, s.generation, perr))
			}
		})
	case perr != nil:
		return transport.NoServer, false, fmt.Errorf("asking an API server's handler of %s whether it knows every field of %s generation %d (a dry-run update, which persists nothing): %w",
			s.plural, s.version, s.generation, perr)
	}
	if cerr == nil && served == string(s.uid) && gen > s.generation {
		s.moved.Store(true)
		return transport.NoServer, false, nil
	}
	if herr == nil && hash != "" && hash != s.want {
		s.storesOld.Store(true)
	}
	switched := hash == s.want && cerr == nil && served == string(s.uid) && gen == s.generation && knows
	behind := !switched
	servers, blind := route.Answered()
	if blind || len(servers) != 1 {
		// Answers that name no server, or two servers answered the questions. Untold,
		// every answer counts; told, the servers' own.
		if behind {
			for _, srv := range servers {
				s.noteBehind(srv)
			}
			if blind {
				s.mu.Lock()
				s.lastBehind = time.Now()
				s.mu.Unlock()
			}
		}
		return transport.NoServer, switched, nil
	}
	srv := servers[0]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, shown := s.since[srv]; shown && behind {
		// A server does not go back to an older CRD: several answer here.
		s.shared.Store(true)
		s.lastBehind = time.Now()
	}
	if switched {
		if _, ok := s.since[srv]; !ok {
			s.since[srv] = time.Now()
			if s.notYet[srv] {
				// Just caught up: its discovery may show the switch a moment before its
				// handler of the objects has it.
				s.since[srv] = s.since[srv].Add(caughtUpMargin)
			}
		}
	} else {
		s.notYet[srv] = true
	}
	return srv, switched, nil
}

// everyServerShows waits until every API server reached stores at the CRD's
// storage version, plus the last one's margin: before then a check's dry run
// proves nothing, and after an undo a write still stores at the losing version.
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
