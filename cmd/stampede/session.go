package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/stampede-dev/stampede/session"
	"github.com/stampede-dev/stampede/spec"
)

// A session protocol's own messages (a namespace, an auth payload, topics,
// destinations, operations) come from the --config file's section named
// after the protocol (docs/protocols.md):
//
//	protocol: socketio
//	socketio:
//	  namespace: /chat
//	  auth: {token: "..."}
//	  events: [["join", "room-1"]]
//
// Its keys are the JSON names of the protocol's section of session.Config;
// durations are written as 10s.

// isSection reports whether a config file's key names a protocol's
// section rather than a flag.
func isSection(key string) bool { return slices.Contains(session.Protocols(), key) }

// fillSession sets the fleet's session: its protocol (already filled from
// --protocol) and the protocol's section of the --config file. A section
// for another protocol than the one spoken is refused, as a key naming no
// flag is.
func fillSession(c *cli.Context, cl *spec.Client) error {
	file := ""
	if hasFlag(c, configFlagName) {
		file = c.String(configFlagName)
	}
	if file == "" {
		return nil
	}
	sections, err := configSections(file)
	if err != nil {
		return err
	}
	for name, raw := range sections {
		if name != cl.Session.Protocol {
			return fmt.Errorf("%s: section %s: only for --protocol %s (the run speaks %q)", file, name, name, cl.Session.Protocol)
		}
		if err := decodeSection(raw, &cl.Session, name); err != nil {
			return fmt.Errorf("%s: section %s: %v", file, name, err)
		}
	}
	return nil
}

// decodeSection decodes a section's JSON into the protocol's field of sc
// (the field whose JSON name is name), durations given as strings.
func decodeSection(raw []byte, sc *session.Config, name string) error {
	v := reflect.ValueOf(sc).Elem()
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if key != name {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		f := v.Field(i)
		if err := durationsToNs(m, f.Type()); err != nil {
			return err
		}
		b, _ := json.Marshal(m)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		return dec.Decode(f.Addr().Interface())
	}
	return fmt.Errorf("no such protocol")
}

// durationsToNs rewrites the string values of t's time.Duration fields in
// m ("10s") as nanoseconds, which their JSON decoding takes.
func durationsToNs(m map[string]any, t reflect.Type) error {
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		s, ok := m[key].(string)
		if !ok || f.Type != reflect.TypeFor[time.Duration]() {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
		m[key] = int64(d)
	}
	return nil
}

// configSections returns the protocol sections of a config file, each as
// JSON.
func configSections(file string) (map[string][]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var doc map[string]any
	switch strings.ToLower(filepath.Ext(file)) {
	case ".toml":
		err = toml.Unmarshal(b, &doc)
	default:
		err = yaml.Unmarshal(b, &doc)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	out := map[string][]byte{}
	for k, v := range doc {
		if !isSection(k) {
			continue
		}
		j, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: section %s: %v", file, k, err)
		}
		out[k] = j
	}
	return out, nil
}

// sessionSetting is the fleet's session section as summary.json's config
// records it, secrets redacted, under the protocol's name; ok is false
// without a protocol.
func sessionSetting(sc session.Config) (name string, value any, ok bool) {
	if sc.Protocol == "" {
		return "", nil, false
	}
	v := reflect.ValueOf(sc.Redacted())
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if key == sc.Protocol {
			return key, v.Field(i).Interface(), true
		}
	}
	return "", nil, false
}

// sectionKey names a field of a protocol's section as the config file
// gives it ("--config section mqtt: qos" for Client.Session.MQTT.QoS);
// "" for any other field.
func sectionKey(field string) string {
	rest, ok := strings.CutPrefix(field, "Client.Session.")
	if !ok {
		return ""
	}
	sect, key, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	key, _, _ = strings.Cut(key, "[") // Events[0]
	t := reflect.TypeFor[session.Config]()
	sf, ok := t.FieldByName(sect)
	if !ok {
		return ""
	}
	kf, ok := sf.Type.FieldByName(key)
	if !ok {
		return ""
	}
	sname, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	kname, _, _ := strings.Cut(kf.Tag.Get("json"), ",")
	return "--config section " + sname + ": " + kname
}
