// Command decode_payload decodes WalletGiftDebited payloads with Go's encoding/json, as the seed
// does, for tests/domain/go_json_differential_test.cc. Standard library only.
//
// Usage: decode_payload CASES RESULTS
//
// CASES has one case a line, "<mode> <hex of the input bytes>"; RESULTS gets one line per case,
// in order. Every byte string in a result is hex, after a one-letter tag, so that any input
// survives the round trip. Modes:
//
//	object   json.Unmarshal(input, &giftMetadata{}), as DecodeGoJsonObject claims to:
//	           ok F1 .. F9              one per field, in struct order: "absent" when the key was
//	                                    missing or always null, "i:<decimal>", "s:<hex>" or
//	                                    "b:true"/"b:false"
//	           syntax <offset> x:<hex>  *json.SyntaxError: its Offset, and its message with the
//	                                    "invalid character 'c' " prefix removed
//	           type x:<hex> <kind>      *json.UnmarshalTypeError: its Field, and the first word of
//	                                    its Value (object, array, string, number, bool)
//	payload  the seed's path (ProjectGiftWallMessage, projectGiftWallLockedEvent): TrimSpace,
//	         "" means "{}", json.Unmarshal, validateGiftWallMetadata:
//	           ok <valid|incomplete> i:target s:gift_id i:count i:sender i:coin s:name s:icon
//	              i:room s:<TrimSpace(gift_id)> s:<TrimSpace(name)> s:<TrimSpace(icon)> b:anonymous
//	           error
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// giftMetadata is the seed's payload struct. The seed text we have
// (/work/shared/seed/000_ae10287e75c0965e.txt) uses it (json.Unmarshal into it, and
// TargetUserID, GiftID, GiftCount in validateGiftWallMetadata) but declares it in another file;
// the rest is DESIGN §2.5 and kGiftFields in server/domain/gift_payload.cc.
type giftMetadata struct {
	TargetUserID int64  `json:"target_user_id"`
	GiftID       string `json:"gift_id"`
	GiftCount    int64  `json:"gift_count"`
	SenderUserID int64  `json:"sender_user_id"`
	CoinAmount   int64  `json:"coin_amount"`
	GiftName     string `json:"gift_name"`
	GiftIcon     string `json:"gift_icon"`
	RoomID       int64  `json:"room_id"`
	// DESIGN §2.5: the wallet's addition, a Go bool.
	Anonymous bool `json:"anonymous"`
}

// Values no decode can produce in a field that was set: decoding replaces invalid UTF-8, and an
// int64 field that keeps both its zero value and this one across two decodes was never set.
const (
	sentinelString = "\xff<absent>"
	sentinelInt    = math.MinInt64 + 0x5EED
)

func prefilled() giftMetadata {
	return giftMetadata{
		TargetUserID: sentinelInt, GiftID: sentinelString, GiftCount: sentinelInt,
		SenderUserID: sentinelInt, CoinAmount: sentinelInt, GiftName: sentinelString,
		GiftIcon: sentinelString, RoomID: sentinelInt, Anonymous: true,
	}
}

func intField(zero, filled int64) string {
	if zero == 0 && filled == sentinelInt {
		return "absent"
	}
	return "i:" + strconv.FormatInt(zero, 10)
}

// A bool field decoded into false and into true (prefilled) was never set if it kept both.
func boolField(zero, filled bool) string {
	if !zero && filled {
		return "absent"
	}
	return "b:" + strconv.FormatBool(zero)
}

func stringField(zero, filled string) string {
	if filled == sentinelString {
		return "absent"
	}
	return "s:" + hex.EncodeToString([]byte(zero))
}

// quoteChar is encoding/json's (scanner.go), to strip it from a SyntaxError's message.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(c))
	return "'" + s[1:len(s)-1] + "'"
}

func describeError(input []byte, err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		msg := syntax.Error()
		if syntax.Offset >= 1 && syntax.Offset <= int64(len(input)) {
			msg = strings.TrimPrefix(msg, "invalid character "+quoteChar(input[syntax.Offset-1])+" ")
		}
		return fmt.Sprintf("syntax %d x:%s", syntax.Offset, hex.EncodeToString([]byte(msg)))
	case errors.As(err, &typ):
		kind := strings.SplitN(typ.Value, " ", 2)[0]
		return fmt.Sprintf("type x:%s %s", hex.EncodeToString([]byte(typ.Field)), kind)
	default:
		return "error x:" + hex.EncodeToString([]byte(err.Error()))
	}
}

func decodeObject(input []byte) string {
	var zero giftMetadata
	zeroErr := json.Unmarshal(input, &zero)
	filled := prefilled()
	filledErr := json.Unmarshal(input, &filled)
	if zeroErr != nil || filledErr != nil {
		a, b := "", ""
		if zeroErr != nil {
			a = describeError(input, zeroErr)
		}
		if filledErr != nil {
			b = describeError(input, filledErr)
		}
		if a != b {
			return "error x:" + hex.EncodeToString([]byte("decodes disagree: "+a+" / "+b))
		}
		return a
	}
	return strings.Join([]string{
		"ok",
		intField(zero.TargetUserID, filled.TargetUserID),
		stringField(zero.GiftID, filled.GiftID),
		intField(zero.GiftCount, filled.GiftCount),
		intField(zero.SenderUserID, filled.SenderUserID),
		intField(zero.CoinAmount, filled.CoinAmount),
		stringField(zero.GiftName, filled.GiftName),
		stringField(zero.GiftIcon, filled.GiftIcon),
		intField(zero.RoomID, filled.RoomID),
		boolField(zero.Anonymous, filled.Anonymous),
	}, " ")
}

func decodePayload(input []byte) string {
	payloadJSON := strings.TrimSpace(string(input))
	if payloadJSON == "" {
		payloadJSON = "{}"
	}
	var metadata giftMetadata
	if err := json.Unmarshal([]byte(payloadJSON), &metadata); err != nil {
		return "error"
	}
	validity := "valid"
	if metadata.TargetUserID <= 0 || strings.TrimSpace(metadata.GiftID) == "" ||
		metadata.GiftCount <= 0 {
		validity = "incomplete"
	}
	i := func(v int64) string { return "i:" + strconv.FormatInt(v, 10) }
	s := func(v string) string { return "s:" + hex.EncodeToString([]byte(v)) }
	return strings.Join([]string{
		"ok", validity,
		i(metadata.TargetUserID), s(metadata.GiftID), i(metadata.GiftCount),
		i(metadata.SenderUserID), i(metadata.CoinAmount), s(metadata.GiftName),
		s(metadata.GiftIcon), i(metadata.RoomID),
		s(strings.TrimSpace(metadata.GiftID)), s(strings.TrimSpace(metadata.GiftName)),
		s(strings.TrimSpace(metadata.GiftIcon)),
		"b:" + strconv.FormatBool(metadata.Anonymous),
	}, " ")
}

func run(casesPath, resultsPath string) error {
	cases, err := os.ReadFile(casesPath)
	if err != nil {
		return err
	}
	out, err := os.Create(resultsPath)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	lines := strings.Split(strings.TrimSuffix(string(cases), "\n"), "\n")
	for n, line := range lines {
		mode, encoded, found := strings.Cut(line, " ")
		input, hexErr := hex.DecodeString(encoded)
		if !found || hexErr != nil {
			return fmt.Errorf("%s:%d: want \"<mode> <hex>\"", casesPath, n+1)
		}
		var result string
		switch mode {
		case "object":
			result = decodeObject(input)
		case "payload":
			result = decodePayload(input)
		default:
			return fmt.Errorf("%s:%d: unknown mode %q", casesPath, n+1, mode)
		}
		if _, err := fmt.Fprintln(w, result); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Close()
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: decode_payload CASES RESULTS")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "decode_payload:", err)
		os.Exit(1)
	}
}
