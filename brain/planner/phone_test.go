package planner_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/packs/plans"
	"github.com/stretchr/testify/require"
)

// TestRulesReadPhonesAsTheExecutorDoes: a lead's, a contact's and an SMS's number is found however it is
// typed, kept as typed, and one that is no number in the business's region is asked about.
func TestRulesReadPhonesAsTheExecutorDoes(t *testing.T) {
	t.Parallel()
	checkPlans(t, []planCase{
		{"new lead Ann Lee (04) 9900 0111 in Newtown", "leads.create", map[string]any{"name": "Ann Lee", "phone": "(04) 9900 0111", "suburb": "Newtown"}},
		{"new lead Ann Lee +61 499 000 111 in Newtown", "leads.create", map[string]any{"name": "Ann Lee", "phone": "+61 499 000 111", "suburb": "Newtown"}},
		{"new lead Ann Lee 0061 499 000 111 in Newtown", "leads.create", map[string]any{"name": "Ann Lee", "phone": "0061 499 000 111", "suburb": "Newtown"}},
		{"new lead Ann Lee +44 20 7946 0018 in Newtown", "leads.create", map[string]any{"name": "Ann Lee", "phone": "+44 20 7946 0018", "suburb": "Newtown"}},
		{"new lead Ann Lee 0499 000 111 2 storeys in Newtown", "leads.create", map[string]any{"name": "Ann Lee", "phone": "0499 000 111", "suburb": "Newtown"}},
		{"add a supplier named Roof Supplies Co (02) 9555 1234", "entity.create", map[string]any{"entity_type": "supplier", "name": "Roof Supplies Co", "contact": map[string]any{"phone": "(02) 9555 1234"}}},
		{"text (04) 9900 0111: running late", "comms.send_sms", map[string]any{"to": "(04) 9900 0111", "message": "running late"}},
	})

	p, _ := gemPlanner(t)
	for _, tt := range []struct{ message, field, said string }{
		{"new lead Bob 0499 000 11 in Newtown", "phone", `"0499 000 11" is not a phone number`},
		{"new lead Bob 021 1234 5678 in Newtown", "phone", "read as a number of AU (GEM_PHONE_REGION)"},
		{"add a client named Bo Li 0199 000 111", "contact", `"0199 000 111" is not a phone number`},
		{"text 0499 000 11: running late", "to", `"0499 000 11" is not a phone number`},
		{"send a payment reminder sms to 0499 000 11: your invoice is due", "to", `"0499 000 11" is not a phone number`},
	} {
		_, err := p.Plan(context.Background(), brain.PlanRequest{Message: tt.message, Now: now})
		require.Equal(t, brain.EINVALID, brain.ErrorCode(err), "%s: %v", tt.message, err)
		missing := brain.AsError(err).Details.(map[string]any)["missing"].([]map[string]string)
		require.Equal(t, tt.field, missing[0]["field"], tt.message)
		require.Contains(t, missing[0]["question"], tt.said, tt.message)
	}

	// Another region reads its own numbers.
	reg, err := gemRegistry()
	require.NoError(t, err)
	nz, err := planner.NewRulesPlanner(reg, plans.Rules, time.UTC, "NZ")
	require.NoError(t, err)
	plan, err := nz.Plan(context.Background(), brain.PlanRequest{Message: "new lead Bob Li 021 1234 5678 in Ponsonby", Now: now})
	require.NoError(t, err)
	var in map[string]any
	require.NoError(t, json.Unmarshal(plan.Calls[0].Input, &in))
	require.Equal(t, "021 1234 5678", in["phone"])
}
