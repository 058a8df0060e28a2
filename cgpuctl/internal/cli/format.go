package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	kib = uint64(1) << 10
	mib = uint64(1) << 20
	gib = uint64(1) << 30
	tib = uint64(1) << 40
)

// gibString prints bytes in GiB the way ACK's inspect does: a whole number
// when it is one ("4"), else at most two decimals without trailing zeros
// ("4.5", "0.25").
func gibString(b uint64) string {
	if b%gib == 0 {
		return strconv.FormatUint(b/gib, 10)
	}
	v := math.Round(float64(b)/float64(gib)*100) / 100
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// percent is the integer percentage ACK prints (rounded down), 0 of 0 is 0.
func percent(part, whole uint64) uint64 {
	if whole == 0 {
		return 0
	}
	return uint64(float64(part) * 100 / float64(whole))
}

// parseSize reads a memory size: a number with an optional binary unit
// (B, K/KiB, M/MiB, G/GiB, T/TiB, case-insensitive); a bare number is GiB,
// the unit of the ACK contract.
func parseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (4, 4GiB, 512MiB)", s)
	}
	mult := map[string]uint64{"": gib, "b": 1, "k": kib, "kib": kib, "m": mib, "mib": mib,
		"g": gib, "gib": gib, "t": tib, "tib": tib}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KiB, MiB, GiB or TiB)", s, t[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || f*float64(mult) >= float64(math.MaxUint64) {
		return 0, fmt.Errorf("size %q: want a positive number", s)
	}
	b := f * float64(mult)
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q: not a whole number of bytes", s)
	}
	return uint64(b), nil
}

// writeJSON prints v indented, the form every `-o json` uses.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table lays out rows in columns: each column is as wide as its widest cell
// plus two spaces (or minWidth[i] if that is more); the last column is not
// padded, so no line ends in spaces.
type table struct {
	minWidth []int
	rows     [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) error {
	var width []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			if n := utf8.RuneCountInString(c) + 2; n > width[i] {
				width[i] = n
			}
		}
	}
	for i := range width {
		if i < len(t.minWidth) && t.minWidth[i] > width[i] {
			width[i] = t.minWidth[i]
		}
	}
	var sb strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			sb.WriteString(c)
			if i < len(r)-1 {
				sb.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)))
			}
		}
		sb.WriteByte('\n')
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// shortID shortens a container id the way docker and crictl print it.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
