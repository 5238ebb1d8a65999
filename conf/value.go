package conf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// sizeSuffixes maps a lower-cased integer suffix to its multiplier: single
// letters are powers of 1000, the b/i/ib forms powers of 1024.
var sizeSuffixes = map[string]int64{"": 1}

func init() {
	dec, bin := int64(1), int64(1)
	for _, s := range []string{"k", "m", "g", "t", "p", "e"} {
		dec *= 1000
		bin *= 1024
		sizeSuffixes[s] = dec
		sizeSuffixes[s+"b"] = bin
		sizeSuffixes[s+"i"] = bin
		sizeSuffixes[s+"ib"] = bin
	}
}

const datetimeLayout = "2006-01-02T15:04:05Z"

// classify gives an unquoted word its type: bool, int64 (with size
// suffix), float64, time.Time, or else string. Words that look like a
// number but cannot be represented are errors.
func classify(w string) (any, error) {
	if b, ok := parseBool(w); ok {
		return b, nil
	}
	if !startsNumeric(w) {
		return w, nil
	}
	if n, ok, err := parseInteger(w); ok || err != nil {
		return n, err
	}
	if isFloat(w) {
		return parseFloat(w)
	}
	if isDatetime(w) {
		t, err := time.Parse(datetimeLayout, w)
		if err != nil {
			return nil, fmt.Errorf("invalid datetime %q", w)
		}
		return t, nil
	}
	return w, nil
}

func parseBool(w string) (bool, bool) {
	switch strings.ToLower(w) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	return false, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// startsNumeric reports whether w starts with a digit, optionally after '-'.
func startsNumeric(w string) bool {
	w = strings.TrimPrefix(w, "-")
	return w != "" && isDigit(w[0])
}

// digitsEnd returns the index just past the run of digits starting at i.
func digitsEnd(w string, i int) int {
	for i < len(w) && isDigit(w[i]) {
		i++
	}
	return i
}

// parseInteger parses [-]digits[suffix]. ok is false if w is not of that
// form; err is set if it is but does not fit in an int64.
func parseInteger(w string) (n int64, ok bool, err error) {
	start := 0
	if strings.HasPrefix(w, "-") {
		start = 1
	}
	end := digitsEnd(w, start)
	mult, known := sizeSuffixes[strings.ToLower(w[end:])]
	if end == start || !known {
		return 0, false, nil
	}
	n, err = strconv.ParseInt(w[:end], 10, 64)
	if err != nil || n > math.MaxInt64/mult || n < math.MinInt64/mult {
		return 0, true, fmt.Errorf("integer %q is out of range", w)
	}
	return n * mult, true, nil
}

// isFloat matches [-]digits.digits with an optional exponent.
func isFloat(w string) bool {
	start := 0
	if strings.HasPrefix(w, "-") {
		start = 1
	}
	i := digitsEnd(w, start)
	if i == start {
		return false
	}
	if i >= len(w) || w[i] != '.' {
		return false
	}
	j := digitsEnd(w, i+1)
	if j == i+1 {
		return false
	}
	if j < len(w) && (w[j] == 'e' || w[j] == 'E') {
		j++
		if j < len(w) && (w[j] == '+' || w[j] == '-') {
			j++
		}
		k := digitsEnd(w, j)
		if k == j {
			return false
		}
		j = k
	}
	return j == len(w)
}

func parseFloat(w string) (any, error) {
	f, err := strconv.ParseFloat(w, 64)
	if errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("float %q is out of range", w)
	}
	if err != nil {
		return nil, fmt.Errorf("invalid float %q", w)
	}
	return f, nil
}

// isDatetime matches the shape YYYY-MM-DDTHH:MM:SSZ.
func isDatetime(w string) bool {
	if len(w) != len(datetimeLayout) {
		return false
	}
	for i := 0; i < len(w); i++ {
		want := datetimeLayout[i]
		if isDigit(want) {
			if !isDigit(w[i]) {
				return false
			}
		} else if w[i] != want {
			return false
		}
	}
	return true
}
