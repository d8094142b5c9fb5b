package businesshandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
)

// twilioMessage is the part of Twilio's Message resource GEM reads.
type twilioMessage struct {
	SID         string `json:"sid"`
	Status      string `json:"status"`
	To          string `json:"to"`
	NumSegments string `json:"num_segments"`
}

// twilioError is Twilio's error body.
type twilioError struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
	Status   int    `json:"status"`
}

// sendTwilioSMS creates a Message through Twilio's REST API:
// POST {BaseURL}/2010-04-01/Accounts/{AccountSID}/Messages.json, form-encoded, with basic auth. From is
// sent as MessagingServiceSid when it is a Messaging Service ("MG...").
func sendTwilioSMS(ctx context.Context, cfg businesspack.TwilioConfig, to, body string) (twilioMessage, error) {
	form := url.Values{"To": {to}, "Body": {body}}
	if strings.HasPrefix(cfg.From, "MG") {
		form.Set("MessagingServiceSid", cfg.From)
	} else {
		form.Set("From", cfg.From)
	}
	endpoint := cfg.BaseURL + "/2010-04-01/Accounts/" + url.PathEscape(cfg.AccountSID) + "/Messages.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return twilioMessage{}, fmt.Errorf("error building the Twilio request: %w", err)
	}
	req.SetBasicAuth(cfg.AccountSID, cfg.AuthToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "gem-executor/"+executor.Version)

	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return twilioMessage{}, ctx.Err() // the call's deadline: a timeout receipt
		}
		msg := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			msg = ue.Err.Error() // without the URL
		}
		// An *executor.Error, not the *url.Error: its Timeout method would make the executor treat the
		// failure as transient and retry a call that may have sent.
		return twilioMessage{}, &executor.Error{Code: registry.CodeHandlerError, Details: map[string]any{"provider": "twilio"},
			Message: "error calling Twilio: " + msg + "; if the request reached Twilio the SMS may have been sent, so check the Twilio console before sending again"}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return twilioMessage{}, &executor.Error{Code: registry.CodeHandlerError,
			Message: fmt.Sprintf("error reading Twilio's reply (HTTP %d): %v; the SMS may have been sent", resp.StatusCode, err)}
	}
	if resp.StatusCode/100 == 2 {
		var m twilioMessage
		if err := json.Unmarshal(raw, &m); err != nil || m.SID == "" {
			return twilioMessage{}, &executor.Error{Code: registry.CodeHandlerError,
				Message: fmt.Sprintf("Twilio accepted the SMS (HTTP %d) but its reply has no message sid: %.200s", resp.StatusCode, raw)}
		}
		return m, nil
	}
	return twilioMessage{}, twilioFailure(resp.StatusCode, raw)
}

// twilioFailure says what a refused request means: Twilio answers 4xx without creating the message.
func twilioFailure(status int, raw []byte) error {
	var te twilioError
	_ = json.Unmarshal(raw, &te)
	if te.Message == "" {
		te.Message = strings.TrimSpace(fmt.Sprintf("%.200s", raw))
	}
	details := map[string]any{"provider": "twilio", "http_status": status, "code": te.Code, "message": te.Message, "more_info": te.MoreInfo}
	desc := fmt.Sprintf("HTTP %d", status)
	if te.Code != 0 {
		desc += ", code " + strconv.Itoa(te.Code)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound:
		return executor.NotConfigured(fmt.Sprintf("Twilio refused the account or credentials (%s: %s)", desc, te.Message), businesspack.SMSRequiredEnv,
			"Check "+businesspack.EnvTwilioAccountSID+" (starts with AC) and "+businesspack.EnvTwilioAuthToken+" against the Twilio console.",
			"Check that "+businesspack.EnvSMSFrom+" is a number or Messaging Service of that account.")
	case status == http.StatusTooManyRequests:
		return &executor.Error{Code: registry.CodeHandlerError, Details: details,
			Message: fmt.Sprintf("Twilio is limiting requests (%s): the SMS was not sent; try again later", desc)}
	case status/100 == 4:
		return &executor.Error{Code: registry.CodeValidation, Details: details,
			Message: fmt.Sprintf("Twilio refused the SMS (%s): %s; it was not sent", desc, te.Message)}
	default:
		return &executor.Error{Code: registry.CodeHandlerError, Details: details,
			Message: fmt.Sprintf("Twilio failed (%s): %s; the SMS may not have been sent, check the Twilio console before sending again", desc, te.Message)}
	}
}
