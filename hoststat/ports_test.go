package hoststat

import "testing"

// TestParsePortRange reads net.ipv4.ip_local_port_range's "LOW HIGH" as
// the number of ports in it, 0 for anything else.
func TestParsePortRange(t *testing.T) {
	for in, want := range map[string]int{
		"32768\t60999\n": 28232, // the default
		"10000 65535":    55536, // scripts/hosts.sh
		"30000 30000":    1,
		"":               0,
		"60999 32768":    0, // reversed
		"0 100":          0,
		"a b":            0,
		"1 2 3":          0,
	} {
		if got := parsePortRange(in); got != want {
			t.Errorf("parsePortRange(%q) = %d, want %d", in, got, want)
		}
	}
}
