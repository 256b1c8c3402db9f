package transport

import "testing"

// pick: the server with the fewest requests outstanding, then its
// connection with the fewest, the first among equals; a full connection
// is passed over, and nil when all are full.
func TestSpreadPick(t *testing.T) {
	type ln struct {
		outstanding int64
		server      int64 // -1: not known yet
	}
	tests := []struct {
		name  string
		lanes []ln
		want  int // -1: none
	}{
		{"idle: the first, so one request at a time keeps to one connection", []ln{{0, -1}, {0, -1}, {0, -1}}, 0},
		{"fewest outstanding", []ln{{3, -1}, {1, -1}, {2, -1}}, 1},
		{"the server, not the connection: three connections on server 0 share its load", []ln{{2, 0}, {2, 0}, {2, 0}, {4, 1}}, 3},
		{"then the server's connection with the fewest", []ln{{5, 0}, {3, 1}, {1, 1}}, 2},
		{"a connection not known yet is a server of its own", []ln{{1, 0}, {1, 0}, {1, -1}}, 2},
		{"a full connection is passed over, though its server is the least loaded", []ln{{streamsPerConnection, 0}, {streamsPerConnection + 50, 1}, {99, 1}}, 2},
		{"every connection full", []ln{{streamsPerConnection, 0}, {streamsPerConnection, 1}}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &spread{freed: make(chan struct{}, 1)}
			for _, l := range tt.lanes {
				x := &lane{}
				x.outstanding.Store(l.outstanding)
				x.server.Store(l.server)
				s.lanes = append(s.lanes, x)
			}
			got := s.pick(nil)
			switch {
			case tt.want < 0 && got != nil:
				t.Fatalf("picked a connection with %d outstanding, want none", got.outstanding.Load()-1)
			case tt.want < 0:
				for i, l := range s.lanes {
					if l.outstanding.Load() != tt.lanes[i].outstanding {
						t.Errorf("connection %d: %d outstanding after no pick, want %d", i, l.outstanding.Load(), tt.lanes[i].outstanding)
					}
				}
			case got != s.lanes[tt.want]:
				for i, l := range s.lanes {
					if l == got {
						t.Fatalf("picked connection %d, want %d", i, tt.want)
					}
				}
			case got.outstanding.Load() != tt.lanes[tt.want].outstanding+1:
				t.Errorf("the pick did not reserve a slot: %d outstanding", got.outstanding.Load())
			}
		})
	}
}
