package drill

import (
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// deployStep is one backend's part of a deploy command, read from its step
// lines: the results.Step drawn on the deploy event, the backend's name,
// and when its connections were ended (its "restart" line).
type deployStep struct {
	results.Step
	Name    string
	Restart time.Duration
}

// stepLinesOf reads the command's step lines (results.ParseStepLine;
// docs/loadbalancer.md "Step lines"), such as scripts/rolling-deploy.sh
// prints, one step per backend in the order they first appear: Start at
// its "drain" (or "restart" without one), Restart at "restart" (Start
// without one), End at "up" (started again and healthy), Ready at
// "ready", Conns the number a "drain" line's detail starts with (-1 when
// none). A backend named sN is process N; another name takes its position
// in the output. Lines of other kinds (deploy-start, deploy-end) are the
// command's span already.
func stepLinesOf(out string, t0 time.Time) []deployStep {
	var steps []deployStep
	index := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		sl, ok := results.ParseStepLine(line)
		if !ok || sl.Name == "deploy" {
			continue
		}
		i, seen := index[sl.Name]
		if !seen {
			proc := len(steps) + 1
			if n, err := strconv.Atoi(strings.TrimPrefix(sl.Name, "s")); err == nil && strings.HasPrefix(sl.Name, "s") && n > 0 {
				proc = n
			}
			i = len(steps)
			index[sl.Name] = i
			steps = append(steps, deployStep{Step: results.Step{Proc: proc, Conns: -1}, Name: sl.Name, Restart: -1})
		}
		at := sl.At.Sub(t0)
		st := &steps[i]
		switch sl.Kind {
		case "drain":
			st.Start = at
			if f := strings.Fields(sl.Detail); len(f) > 0 {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					st.Conns = n
				}
			}
		case "restart":
			st.Restart = at
			if st.Start == 0 {
				st.Start = at
			}
		case "up":
			st.End = at
		case "ready":
			st.Ready = at
		}
	}
	for i := range steps {
		if steps[i].Restart < 0 {
			steps[i].Restart = steps[i].Start
		}
	}
	return steps
}

// backendEvents returns one recovery event per backend the deploy
// restarted: kind "backend", mode "restart", spec its name, from its
// restart (when its clients were cut) to its "up" line. It is ready as
// soon as the clients had somewhere to go: at the restart itself when
// another backend of the deploy was in rotation then (not between its
// drain and its ready line; a backend whose steps come later is in
// rotation until its drain), else at the first ready line after the
// restart, its own included; never ready when there is none (the command
// failed or was killed first). Behind a load balancer in a rolling deploy
// the others serve throughout, so every failed attempt of the herd that
// follows counts as wasted (docs/drill.md "The deploy"). The event
// explains the outage its clients detect until it is up again
// (summary.DropExplained).
func backendEvents(steps []deployStep) []results.Event {
	var out []results.Event
	for i, st := range steps {
		ev := results.Event{Kind: "backend", Mode: "restart", Spec: st.Name, Start: st.Restart, End: st.End, Explains: true}
		if ready, ok := servedAt(steps, i); ok {
			ev.Ready = ready
		} else {
			ev.NeverReady = true
		}
		out = append(out, ev)
	}
	return out
}

// servedAt is when the clients cut by step i's restart could connect
// again (backendEvents), and false when no backend was ready after it.
func servedAt(steps []deployStep, i int) (time.Duration, bool) {
	at := steps[i].Restart
	first, found := time.Duration(0), false
	for j, o := range steps {
		if j != i && (at < o.Start || (o.Ready > 0 && at >= o.Ready)) {
			return at, true // o is in rotation at the restart
		}
		if o.Ready >= at && (!found || o.Ready < first) {
			first, found = o.Ready, true
		}
	}
	return first, found
}
