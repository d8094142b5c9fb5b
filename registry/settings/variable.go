package settings

// Unset is the Default of a variable that has none: left unset, what it sets is not configured.
const Unset = "unset"

// Variable is an environment variable a pack's ConfigFromEnv reads, as the executor's usage and the pack's
// docs list it.
type Variable struct {
	// Name is the variable, such as GEM_SMS_FROM.
	Name string
	// Default is what leaving it unset means, as the usage prints it; Unset when there is no default.
	Default string
	// Description says what it sets, in a line.
	Description string
}

// Merge lists the variables of several packs, each once: where the first pack lists it, with the default and
// description of the last one that does. A later pack describes a setting it shares with earlier ones for
// all their tools (the agent skills pack's GEM_LLM_* lines speak for the business pack's tools too).
func Merge(lists ...[]Variable) []Variable {
	var merged []Variable
	at := map[string]int{}
	for _, list := range lists {
		for _, v := range list {
			if i, ok := at[v.Name]; ok {
				merged[i] = v
				continue
			}
			at[v.Name] = len(merged)
			merged = append(merged, v)
		}
	}
	return merged
}
