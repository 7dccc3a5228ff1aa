package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/calibration"
)

// writeCalibration writes the calibration file at path, when there is
// one (the product's is calibration/calibration.json): the figures it
// holds, or the product's embedded ones when there is none yet, with
// those the real run in dir measured in place of theirs
// (calibrationFigures). kind is the machine
// the run was made on, as its source names it ("VM, 24 GiB"); its cores
// are the run's summary.json's, its kernel this machine's: write the file
// where the run was made.
func writeCalibration(path, dir, kind string) error {
	if path == "" {
		return nil
	}
	if kind == "" {
		return errors.New("-write-calibration: needs -machine, what the machine the run was made on is")
	}
	s := load(dir)
	rc, err := readRunConfig(dir)
	if err != nil {
		return err
	}
	h, ok := herdOf(dir, s)
	if !ok {
		return fmt.Errorf("-write-calibration: %s: no herd to measure (an event with a Ready, its upgrades, resources.csv and timeline.csv)", dir)
	}
	_, ping, _ := machineFlags(dir, s, rc)
	figs, err := calibrationFigures(rc, h, ping, calibration.Machine{Kind: kind, Cores: int(rc.Machine.Cores), Kernel: kernelRelease()})
	if err != nil {
		return fmt.Errorf("-write-calibration: %s: %w", dir, err)
	}
	f := calibration.File{Figures: append([]calibration.Figure(nil), calibration.Embedded.Figures...)}
	if b, err := os.ReadFile(path); err == nil {
		if f, err = calibration.Parse(b); err != nil {
			return fmt.Errorf("-write-calibration %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, g := range figs {
		f.Set(g)
	}
	b, err := f.Marshal()
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: %s's herd costs written\n", path, dir)
	return nil
}

// calibrationFigures returns what a real run's herd gives the
// simulator's defaults: its loadgen's CPU an attempt (less its upgrades)
// and an upgrade, its target's an upgrade, and, when the run measured one
// (ping, as machineFlags gives it), a ping's; each with the run's command,
// its day and machine m.
func calibrationFigures(rc *runConfig, h herdCosts, ping string, m calibration.Machine) ([]calibration.Figure, error) {
	day, _, _ := strings.Cut(rc.RunID, "T")
	if _, err := time.Parse(time.DateOnly, day); err != nil {
		return nil, fmt.Errorf("summary.json run_id %q: no day to date the figures by", rc.RunID)
	}
	src := calibration.Source{
		Command: runCommand(rc) + "; lab/calibrate -from DIR -herd-from DIR -write-calibration FILE",
		Date:    day,
		Machine: m,
		Note:    h.String(),
	}
	us := func(v float64) string { return time.Duration(math.Round(v*10) * 100).String() }
	figs := []calibration.Figure{
		{Name: "sim.cpu.attempt", Value: us(h.Attempt), Source: src},
		{Name: "sim.cpu.upgrade", Value: us(h.Upgrade), Source: src},
		{Name: "sim.cpu.accept", Value: us(h.Accept), Source: src},
	}
	if ping != "" {
		d, err := time.ParseDuration(ping)
		if err != nil {
			return nil, err
		}
		p := src
		p.Note = "both ends' CPU over the loadgens' sweeps of pings from the ramp's end to the event"
		figs = append(figs, calibration.Figure{Name: "sim.cpu.ping", Value: d.String(), Source: p})
	}
	return figs, nil
}

// runCommand writes the command of a real run as its spec gives it:
// stampede run and the flags of simFlags with a value.
func runCommand(rc *runConfig) string {
	cmd := []string{"stampede", "run"}
	for _, f := range simFlags(rc.Spec) {
		v := f.value
		if v == "" {
			continue
		}
		if strings.ContainsAny(v, " ;'") {
			v = "'" + v + "'"
		}
		cmd = append(cmd, "--"+f.flag, v)
	}
	return strings.Join(cmd, " ")
}

// kernelRelease returns this machine's kernel release, uname -r.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
