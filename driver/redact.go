package driver

import (
	"regexp"
	"strings"
)

// CredentialMask replaces the password of a URL, and the value of a password-like
// parameter, in values that are shown but not secret as a whole.
const CredentialMask = "xxxxx"

var (
	// urlUserinfo is the user:password@ part of a URL (scheme://user:password@host). The
	// password runs to the last @ of the list item, so one with @, / or # in it
	// (unescaped, as people write them) is hidden whole; at worst part of the host is too.
	urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s,;:/@?#]*):[^\s,;]*@`)
	// addrUserinfo is the same in a scheme-less address (user:password@host:port) at the
	// start of a list item; a password starting with / would be a URL's //.
	addrUserinfo = regexp.MustCompile(`((?:^|[\s,;])[^\s,;:/@?#]*):(?:[^\s,;/][^\s,;]*)?@`)
	// credentialParam is a password-like name=value pair: a URL query parameter
	// (?password=, &sslpassword=, &api_key=) or a key=value DSN word (password='x').
	// credentialJSON is a password-like member of a JSON object ("password": "x"), as in a
	// script's config or a request template.
	credentialJSON = regexp.MustCompile(`(?i)("[a-z0-9_.-]*(?:password|passwd|pwd|secret|token|credential|apikey|api_key|accesskey|access_key)[a-z0-9_.-]*"\s*:\s*)"(?:[^"\\]|\\.)*"`)
	// credentialHeader is a header or metadata pair that carries credentials
	// (Authorization: Bearer x), in the "Name: value | Name: value" lists of options.
	credentialHeader = regexp.MustCompile(`(?i)((?:^|[|\n])\s*(?:authorization|proxy-authorization|x-api-key|api-key|x-auth-token|cookie)\s*:\s*)[^|\n]*[^|\n\s]`)
	credentialParam  = regexp.MustCompile(`(?i)((?:^|[\s?&;])[a-z0-9_.-]*(?:password|passwd|pwd|secret|token|credential|apikey|api_key|accesskey|access_key)[a-z0-9_.-]*\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&;,#]*)`)
)

// Shown returns a configuration value as it may be shown to a user: in errors, listings,
// API answers, reports and logs. A secret that is set becomes Redacted. Any other value
// keeps its text but loses the password of every URL in it (redis://u:pw@h shows as
// redis://u:xxxxx@h), the value of every password-like parameter (?password=,
// password=... in a key=value DSN, "password": "..." in JSON) and of credential headers
// (Authorization: ...): connection strings, script configs and header lists carry
// credentials in options nobody marked secret. Every place that shows a value goes through this function, so
// the rule is the same everywhere.
func Shown(secret bool, value string) string {
	if value == "" {
		return ""
	}
	if secret {
		return Redacted
	}
	if !strings.ContainsAny(value, "@=:") {
		return value // nothing credential-shaped: the common case stays cheap
	}
	value = urlUserinfo.ReplaceAllString(value, "${1}:"+CredentialMask+"@")
	value = addrUserinfo.ReplaceAllString(value, "${1}:"+CredentialMask+"@")
	value = credentialJSON.ReplaceAllString(value, `${1}"`+CredentialMask+`"`)
	value = credentialHeader.ReplaceAllString(value, "${1}"+CredentialMask)
	return credentialParam.ReplaceAllString(value, "${1}"+CredentialMask)
}
