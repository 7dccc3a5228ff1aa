package haproxy

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Stat is one row of `show stat`: a frontend, a backend or a server, with
// the counters a drill reads. Counters are totals since HAProxy started;
// Scur and Qcur are current values. HAProxy leaves a column empty where it
// does not apply (a frontend has no queue): that reads as 0.
type Stat struct {
	// Proxy is the frontend's or backend's name (pxname).
	Proxy string `json:"proxy"`
	// Server is the server's name, or FRONTEND or BACKEND (svname).
	Server string `json:"server"`
	// Status is UP, DOWN, DRAIN, MAINT, NOLB, OPEN... as HAProxy says it.
	Status string `json:"status"`
	// Scur is the sessions open now; Stot the sessions since start.
	Scur, Stot uint64
	// Qcur is the clients waiting in the queue for a server now.
	Qcur uint64
	// Econ counts failed connects to a server; Eresp bad or aborted
	// responses from it.
	Econ, Eresp uint64
	// Wretr counts connect retries; Wredis redispatches to another server.
	Wretr, Wredis uint64
	// Hrsp5xx counts 5xx answers, HAProxy's own 502/503/504 included
	// (frontend and backend rows).
	Hrsp5xx uint64
	// Chkdown counts UP to DOWN transitions of the health check.
	Chkdown uint64
	// CheckStatus is the last health check's result (L4OK, L7OK, L4CON...).
	CheckStatus string
}

// Key names a row across HAProxy instances: "proxy/server".
func (s Stat) Key() string { return s.Proxy + "/" + s.Server }

// statColumns maps the `show stat` columns a Stat holds.
var statColumns = map[string]func(*Stat) *uint64{
	"scur": func(s *Stat) *uint64 { return &s.Scur }, "stot": func(s *Stat) *uint64 { return &s.Stot },
	"qcur": func(s *Stat) *uint64 { return &s.Qcur }, "econ": func(s *Stat) *uint64 { return &s.Econ },
	"eresp": func(s *Stat) *uint64 { return &s.Eresp }, "wretr": func(s *Stat) *uint64 { return &s.Wretr },
	"wredis": func(s *Stat) *uint64 { return &s.Wredis }, "hrsp_5xx": func(s *Stat) *uint64 { return &s.Hrsp5xx },
	"chkdown": func(s *Stat) *uint64 { return &s.Chkdown },
}

// ParseStat reads the CSV of `show stat`: a header line "# pxname,svname,..."
// and one row per frontend, backend and server. Columns are found by name,
// so versions that add columns parse alike.
func ParseStat(r io.Reader) ([]Stat, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("empty answer: no header line")
	}
	if err != nil {
		return nil, err
	}
	if len(head) == 0 || !strings.HasPrefix(head[0], "# ") {
		return nil, fmt.Errorf("header line starts %q, want \"# pxname\"", strings.Join(head[:min(len(head), 2)], ","))
	}
	col := map[string]int{}
	for i, name := range head {
		col[strings.TrimPrefix(name, "# ")] = i
	}
	for _, need := range []string{"pxname", "svname", "status"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("header has no %s column", need)
		}
	}
	var out []Stat
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(rec) == 1 && rec[0] == "" {
			continue
		}
		field := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return rec[i]
			}
			return ""
		}
		// "* L7OK": a check is running; its last result is L7OK.
		check := strings.TrimPrefix(field("check_status"), "* ")
		s := Stat{Proxy: field("pxname"), Server: field("svname"), Status: field("status"), CheckStatus: check}
		if s.Proxy == "" || s.Server == "" {
			return nil, fmt.Errorf("line %d: no pxname or svname", line)
		}
		for name, p := range statColumns {
			v := field(name)
			if v == "" {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s %q: not a count", line, name, v)
			}
			*p(&s) = n
		}
		out = append(out, s)
	}
}
