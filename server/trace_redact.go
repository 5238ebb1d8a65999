package server

import (
	"encoding/json"
	"strings"
	"unicode"
)

const redacted = "[REDACTED]"

// redactConnect hides the secrets of a traced CONNECT: the values of
// "pass…" and "auth_token…" keys, "sig", "proxy_sig", "nkey" (as
// nats-server) and "jwt" (a bearer credential), whatever the spacing, key
// order, escapes or letter case (encoding/json matches field names without
// regard to case, so "PASS" is a password too). It scans JSON strings with
// their escapes, so a secret containing \" is hidden whole; input that is not
// JSON is redacted as far as it reads like it.
func redactConnect(arg []byte) []byte {
	out := make([]byte, 0, len(arg)+len(redacted))
	for i := 0; i < len(arg); {
		if arg[i] != '"' {
			out = append(out, arg[i])
			i++
			continue
		}
		end := jsonStringEnd(arg, i)
		out = append(out, arg[i:end]...)
		key := arg[i:end]
		i = end
		j := skipJSONSpace(arg, i)
		if j >= len(arg) || arg[j] != ':' || !secretKey(key) {
			continue
		}
		j = skipJSONSpace(arg, j+1)
		out = append(out, arg[i:j]...)
		i = j
		if i < len(arg) && arg[i] == '"' {
			i = jsonStringEnd(arg, i)
			out = append(out, '"')
			out = append(out, redacted...)
			out = append(out, '"')
			continue
		}
		for i < len(arg) && !strings.ContainsRune(",}] \t\r\n", rune(arg[i])) {
			i++
		}
		out = append(out, redacted...)
	}
	return out
}

// jsonStringEnd returns the index after the string starting at b[i] (a
// quote), honouring backslash escapes; len(b) when it is not closed.
func jsonStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// secretKey reports whether the quoted key names a secret.
func secretKey(quoted []byte) bool {
	var key string
	if err := json.Unmarshal(quoted, &key); err != nil {
		key = strings.Trim(string(quoted), `"`)
	}
	key = foldKey(key)
	switch key {
	case "sig", "proxy_sig", "nkey", "jwt":
		return true
	}
	return strings.HasPrefix(key, "pass") || strings.HasPrefix(key, "auth_token")
}

// foldKey lower-cases key as encoding/json's case-insensitive field match
// sees it: the long s (U+017F) is an s and the Kelvin sign a k.
func foldKey(key string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case 'ſ':
			return 's'
		case 'K':
			return 'k'
		}
		return unicode.ToLower(r)
	}, key)
}
