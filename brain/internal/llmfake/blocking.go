package llmfake

import "github.com/stretchr/testify/require"

// Blocking is turn, answered only once release is closed (or sent on); asked hears when the request
// arrives, so a test can act while a turn is in flight.
func Blocking(turn Turn, asked chan<- struct{}, release <-chan struct{}) Turn {
	check := turn.Check
	turn.Check = func(t require.TestingT, req *Request) {
		asked <- struct{}{}
		<-release
		if check != nil {
			check(t, req)
		}
	}
	return turn
}
