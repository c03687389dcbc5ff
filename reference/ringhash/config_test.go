package ringhash

import (
	"strings"
	"testing"

	"google.golang.org/grpc/balancer"
)

// TestConfig_DefaultsLimitsAndCap verifies A42, LB Policy Config: sizes
// default to 1024 and 4096, values above 8M are rejected, min above max is
// rejected, values above the client-side cap of 4096 are treated as 4096;
// and the request hash header is a lower-cased text metadata key.
func TestConfig_DefaultsLimitsAndCap(t *testing.T) {
	parser := balancer.Get(Name).(balancer.ConfigParser)
	for _, c := range []struct {
		js        string
		min, max  uint64
		header    string
		errSubstr string
	}{
		{js: ``, min: 1024, max: 4096},
		{js: `{}`, min: 1024, max: 4096},
		{js: `{"minRingSize":0,"maxRingSize":0}`, min: 1024, max: 4096},
		{js: `{"minRingSize":10,"maxRingSize":20,"unknown":true}`, min: 10, max: 20},
		{js: `{"maxRingSize":8388608}`, min: 1024, max: 4096},
		{js: `{"minRingSize":6000,"maxRingSize":8000}`, min: 4096, max: 4096},
		{js: `{"minRingSize":8388609,"maxRingSize":8388609}`, errSubstr: "minRingSize 8388609 is above the limit"},
		{js: `{"maxRingSize":8388609}`, errSubstr: "maxRingSize 8388609 is above the limit"},
		{js: `{"minRingSize":20,"maxRingSize":10}`, errSubstr: "greater than maxRingSize"},
		{js: `{"minRingSize":5000}`, errSubstr: "greater than maxRingSize"},
		{js: `{"minRingSize":-1}`, errSubstr: "invalid LB config"},
		{js: `[]`, errSubstr: "invalid LB config"},
		{js: `{"requestHashHeader":"X-Conform-Hash"}`, min: 1024, max: 4096, header: "x-conform-hash"},
		{js: `{"requestHashHeader":"x-key-bin"}`, errSubstr: "binary headers"},
		{js: `{"requestHashHeader":":authority"}`, errSubstr: "not allowed"},
		{js: `{"requestHashHeader":"bad key"}`, errSubstr: "not allowed"},
	} {
		got, err := parser.ParseConfig([]byte(c.js))
		if c.errSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), c.errSubstr) {
				t.Errorf("ParseConfig(%s) = %v, %v; want an error containing %q", c.js, got, err, c.errSubstr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseConfig(%s): %v", c.js, err)
			continue
		}
		cfg := got.(*lbConfig)
		if cfg.MinRingSize != c.min || cfg.MaxRingSize != c.max || cfg.RequestHashHeader != c.header {
			t.Errorf("ParseConfig(%s) = min %d max %d header %q; want %d %d %q", c.js, cfg.MinRingSize, cfg.MaxRingSize, cfg.RequestHashHeader, c.min, c.max, c.header)
		}
	}
}
