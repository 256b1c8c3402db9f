package sandbox

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
)

// crdPrefix is where CRDs are kept in etcd: what a WatchHold holds by
// default.
var crdPrefix = path.Join(storagePrefix, "apiextensions.k8s.io", "customresourcedefinitions") + "/"

// WatchHold is an etcd gRPC proxy that can hold back what some watches
// deliver. An API server pointed at it reads and writes etcd as any other
// does, but, while held, learns of changes under the held prefixes late:
// the API server of an HA control plane whose etcd watch lags the others'.
type WatchHold struct {
	prefixes []string
	conn     *grpc.ClientConn
	server   *grpc.Server
	endpoint string

	mu      sync.Mutex
	holding bool
	streams map[*heldStream]struct{}
}

// NewWatchHold starts a proxy to the etcd at endpoint (http://host:port)
// holding the watches of keys under prefixes, by default the CRDs'.
func NewWatchHold(endpoint string, prefixes ...string) (*WatchHold, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("etcd endpoint %q: want http://host:port", endpoint)
	}
	if len(prefixes) == 0 {
		prefixes = []string{crdPrefix}
	}
	// gRPC's default 4 MiB would cut a page of big objects that etcd
	// itself returns whole.
	conn, err := grpc.NewClient(u.Host, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.MaxCallSendMsgSize(math.MaxInt32)))
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		conn.Close()
		return nil, err
	}
	h := &WatchHold{prefixes: prefixes, conn: conn, endpoint: "http://" + l.Addr().String(), streams: map[*heldStream]struct{}{}}
	// The API server's etcd client pings every 30s; gRPC's default policy
	// would take that for abuse and hang up. etcd allows one in 5s.
	h.server = grpc.NewServer(grpc.MaxRecvMsgSize(math.MaxInt32), grpc.MaxSendMsgSize(math.MaxInt32),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}))
	pb.RegisterKVServer(h.server, kvProxy{c: pb.NewKVClient(conn)})
	pb.RegisterLeaseServer(h.server, leaseProxy{c: pb.NewLeaseClient(conn)})
	pb.RegisterMaintenanceServer(h.server, maintenanceProxy{c: pb.NewMaintenanceClient(conn)})
	pb.RegisterClusterServer(h.server, clusterProxy{c: pb.NewClusterClient(conn)})
	pb.RegisterWatchServer(h.server, watchProxy{h: h})
	go func() { _ = h.server.Serve(l) }()
	return h, nil
}

// Endpoint is the proxy's etcd endpoint, for an API server's etcd servers.
func (h *WatchHold) Endpoint() string { return h.endpoint }

// Hold queues, from now on, what the held watches deliver.
func (h *WatchHold) Hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holding = true
}

// Release delivers everything queued, in order, and stops holding.
func (h *WatchHold) Release() {
	h.mu.Lock()
	h.holding = false
	h.mu.Unlock()
	for _, s := range h.snapshot() {
		s.mu.Lock()
		_ = s.flush() // a stream that fails is gone, and its client with it
		s.mu.Unlock()
	}
}

// Queued counts the watch responses held back.
func (h *WatchHold) Queued() int {
	n := 0
	for _, s := range h.snapshot() {
		s.mu.Lock()
		n += len(s.queue)
		s.mu.Unlock()
	}
	return n
}

// Stop closes the proxy and every stream through it.
func (h *WatchHold) Stop() {
	h.server.Stop()
	_ = h.conn.Close()
}

// snapshot lists the streams; a stream's lock is taken without h.mu, as
// deliver takes h.mu inside it.
func (h *WatchHold) snapshot() []*heldStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	streams := make([]*heldStream, 0, len(h.streams))
	for s := range h.streams {
		streams = append(streams, s)
	}
	return streams
}

func (h *WatchHold) isHolding() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holding
}

func (h *WatchHold) heldKey(key string) bool {
	for _, p := range h.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

type watchProxy struct {
	pb.UnimplementedWatchServer
	h *WatchHold
}

// Watch relays one watch stream. etcd's client multiplexes its watches
// over one stream, so the held ones are told apart by watch ID: etcd
// answers the create requests of a stream in order.
func (p watchProxy) Watch(down pb.Watch_WatchServer) error {
	h := p.h
	s := &heldStream{h: h, send: down.Send, held: map[int64]bool{}}
	h.mu.Lock()
	h.streams[s] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.streams, s)
		h.mu.Unlock()
	}()
	return pipe(down, pb.NewWatchClient(h.conn).Watch, s.requested, s.deliver)
}

type heldStream struct {
	h    *WatchHold
	send func(*pb.WatchResponse) error

	mu      sync.Mutex     // orders sends and the queue
	pending []string       // keys of create requests not answered yet
	held    map[int64]bool // IDs of the watches of held keys
	queue   []*pb.WatchResponse
}

func (s *heldStream) requested(r *pb.WatchRequest) {
	if c := r.GetCreateRequest(); c != nil {
		s.mu.Lock()
		s.pending = append(s.pending, string(c.Key))
		s.mu.Unlock()
	}
}

func (s *heldStream) deliver(r *pb.WatchResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Created && len(s.pending) > 0 {
		key := s.pending[0]
		s.pending = s.pending[1:]
		if r.WatchId != -1 && s.h.heldKey(key) {
			s.held[r.WatchId] = true
		}
	}
	// A progress notification for the whole stream (watch ID -1) tells
	// every watch on it that it is up to date: it must not overtake the
	// held events.
	progress := r.WatchId == -1 && !r.Created && !r.Canceled && len(r.Events) == 0
	holding := s.h.isHolding()
	hold := holding && (s.held[r.WatchId] || progress && len(s.held) > 0)
	if r.Canceled {
		delete(s.held, r.WatchId)
	}
	if hold {
		s.queue = append(s.queue, r)
		return nil
	}
	if !holding { // Release may not have reached this stream yet
		if err := s.flush(); err != nil {
			return err
		}
	}
	return s.send(r)
}

func (s *heldStream) flush() error {
	for len(s.queue) > 0 {
		if err := s.send(s.queue[0]); err != nil {
			return err
		}
		s.queue = s.queue[1:]
	}
	return nil
}

// pipe relays a bidirectional stream: requests go up at once (requested
// sees each before etcd can answer it), responses come down through
// deliver.
func pipe[Req, Resp any](down grpc.BidiStreamingServer[Req, Resp],
	open func(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[Req, Resp], error),
	requested func(*Req), deliver func(*Resp) error) error {
	ctx, cancel := context.WithCancel(outgoing(down.Context()))
	defer cancel()
	up, err := open(ctx)
	if err != nil {
		return err
	}
	go func() {
		for {
			req, err := down.Recv()
			if err == io.EOF {
				_ = up.CloseSend()
				return
			}
			if err != nil {
				cancel()
				return
			}
			requested(req)
			if err := up.Send(req); err != nil {
				cancel()
				return
			}
		}
	}()
	for {
		resp, err := up.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := deliver(resp); err != nil {
			return err
		}
	}
}

// outgoing passes the client's metadata on: etcd's client asks with it,
// for one, that a watch end when etcd has no leader.
func outgoing(ctx context.Context) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	return metadata.NewOutgoingContext(ctx, md)
}

type kvProxy struct {
	pb.UnimplementedKVServer
	c pb.KVClient
}

func (p kvProxy) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	return p.c.Range(outgoing(ctx), r)
}

func (p kvProxy) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	return p.c.Put(outgoing(ctx), r)
}

func (p kvProxy) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	return p.c.DeleteRange(outgoing(ctx), r)
}

func (p kvProxy) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	return p.c.Txn(outgoing(ctx), r)
}

func (p kvProxy) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	return p.c.Compact(outgoing(ctx), r)
}

// RangeStream is relayed too: the API server's watch tries it first, and
// an Unimplemented here would turn it off for every server in the process.
func (p kvProxy) RangeStream(r *pb.RangeRequest, down grpc.ServerStreamingServer[pb.RangeStreamResponse]) error {
	up, err := p.c.RangeStream(outgoing(down.Context()), r)
	if err != nil {
		return err
	}
	for {
		resp, err := up.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := down.Send(resp); err != nil {
			return err
		}
	}
}

type leaseProxy struct {
	pb.UnimplementedLeaseServer
	c pb.LeaseClient
}

func (p leaseProxy) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	return p.c.LeaseGrant(outgoing(ctx), r)
}

func (p leaseProxy) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	return p.c.LeaseRevoke(outgoing(ctx), r)
}

func (p leaseProxy) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	return p.c.LeaseTimeToLive(outgoing(ctx), r)
}

func (p leaseProxy) LeaseLeases(ctx context.Context, r *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	return p.c.LeaseLeases(outgoing(ctx), r)
}

func (p leaseProxy) LeaseKeepAlive(down grpc.BidiStreamingServer[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse]) error {
	return pipe(down, p.c.LeaseKeepAlive, func(*pb.LeaseKeepAliveRequest) {}, down.Send)
}

type maintenanceProxy struct {
	pb.UnimplementedMaintenanceServer
	c pb.MaintenanceClient
}

func (p maintenanceProxy) Status(ctx context.Context, r *pb.StatusRequest) (*pb.StatusResponse, error) {
	return p.c.Status(outgoing(ctx), r)
}

func (p maintenanceProxy) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	return p.c.Alarm(outgoing(ctx), r)
}

type clusterProxy struct {
	pb.UnimplementedClusterServer
	c pb.ClusterClient
}

func (p clusterProxy) MemberList(ctx context.Context, r *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	return p.c.MemberList(outgoing(ctx), r)
}
