package trace

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/conformlab/conform/harness/scenario"
)

// TestSchema_ClientEnvMatchesScenario verifies the schema's scenario
// client.env names exactly the variables a scenario may set
// (scenario.EnvVars), with the values true and false.
func TestSchema_ClientEnvMatchesScenario(t *testing.T) {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			Scenario struct {
				Properties struct {
					Client struct {
						Properties struct {
							Env struct {
								PropertyNames        struct{ Enum []string } `json:"propertyNames"`
								AdditionalProperties struct{ Enum []string } `json:"additionalProperties"`
							} `json:"env"`
						} `json:"properties"`
					} `json:"client"`
				} `json:"properties"`
			} `json:"scenario"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	env := doc.Defs.Scenario.Properties.Client.Properties.Env
	if got, want := slices.Sorted(slices.Values(env.PropertyNames.Enum)), scenario.EnvVars(); !slices.Equal(got, want) {
		t.Errorf("schema client.env names %v, scenario.EnvVars %v", got, want)
	}
	if got := env.AdditionalProperties.Enum; !slices.Equal(got, []string{"true", "false"}) {
		t.Errorf("schema client.env values %v, want [true false]", got)
	}
}
