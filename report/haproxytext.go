package report

import "github.com/stampede-dev/stampede/haproxy"

// writeHAProxy prints the load balancer's figures: one line for each
// frontend and one per server, the counters of the run.
func writeHAProxy(ew *errWriter, t *haproxy.Totals) {
	if t.Samples == 0 {
		ew.printf("haproxy: - (%s)\n", t.Note)
		return
	}
	for _, r := range t.Rows {
		if r.Server == "BACKEND" {
			continue
		}
		ew.printf("haproxy %s/%s: sessions %d (peak %d), queue peak %d, 5xx %d, connect errors %d, retries %d, redispatches %d, checks down %d, now %s\n",
			r.Proxy, r.Server, r.Sessions, r.SessionsPeak, r.QueuePeak, r.HTTP5xx, r.ConnectErrors, r.Retries, r.Redispatches, r.ChecksDown, r.LastStatus)
	}
	if t.Note != "" {
		ew.printf("haproxy: %s\n", t.Note)
	}
}
