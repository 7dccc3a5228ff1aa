package backoff

import (
	"encoding/json"
	"fmt"
)

// UnmarshalJSON reads a policy written either as its spec string
// ("exp:initial=1s,max=60s", as summary.json's config records the
// --policy flag) or as the object of its fields.
func (p *Policy) UnmarshalJSON(b []byte) error {
	var spec string
	if json.Unmarshal(b, &spec) == nil {
		q, err := Parse(spec)
		if err != nil {
			return fmt.Errorf("backoff: policy %q: %w", spec, err)
		}
		*p = q
		return nil
	}
	type fields Policy // without this method
	return json.Unmarshal(b, (*fields)(p))
}
