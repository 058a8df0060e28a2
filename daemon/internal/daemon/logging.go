package daemon

import (
	"bytes"
	"io"
	"os"

	"github.com/cgpu-dev/cgpu/daemon/internal/config"
	"github.com/sirupsen/logrus"
)

// journaldFormatter writes logfmt lines without a timestamp (the journal
// stamps each line) behind a <N> syslog priority prefix, which journald
// reads as the line's priority (SyslogLevelPrefix=yes, its default).
type journaldFormatter struct {
	text logrus.TextFormatter
}

func newJournaldFormatter() *journaldFormatter {
	return &journaldFormatter{text: logrus.TextFormatter{DisableTimestamp: true, DisableColors: true, DisableQuote: false}}
}

var priorities = map[logrus.Level]byte{
	logrus.PanicLevel: '2', logrus.FatalLevel: '2', logrus.ErrorLevel: '3',
	logrus.WarnLevel: '4', logrus.InfoLevel: '6', logrus.DebugLevel: '7', logrus.TraceLevel: '7',
}

func (f *journaldFormatter) Format(e *logrus.Entry) ([]byte, error) {
	line, err := f.text.Format(e)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(line) + 3)
	b.WriteByte('<')
	b.WriteByte(priorities[e.Level])
	b.WriteByte('>')
	b.Write(line)
	return b.Bytes(), nil
}

// underJournal says whether stderr is the journal: systemd sets
// JOURNAL_STREAM to the device and inode of the stream it connected.
func underJournal(getenv func(string) string) bool {
	return getenv("JOURNAL_STREAM") != ""
}

// ConfigureLogger applies log_level and log_format to l.
func ConfigureLogger(l *logrus.Logger, c config.Config, getenv func(string) string) {
	l.SetLevel(c.Level())
	format := c.LogFormat
	if format == config.FormatAuto {
		format = config.FormatText
		if underJournal(getenv) {
			format = config.FormatJournald
		}
	}
	switch format {
	case config.FormatJSON:
		l.SetFormatter(&logrus.JSONFormatter{})
	case config.FormatJournald:
		l.SetFormatter(newJournaldFormatter())
	default:
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
	}
}

// NewLogger is the daemon's logger on stderr.
func NewLogger(out io.Writer) *logrus.Logger {
	if out == nil {
		out = os.Stderr
	}
	l := logrus.New()
	l.SetOutput(out)
	return l
}
