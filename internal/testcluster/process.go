package testcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubepact/kubepact/internal/testenv"
)

// process is one running control-plane component.
type process struct {
	name    string // component name, for example "kube-apiserver"
	cmd     *exec.Cmd
	logPath string
	logFile *os.File

	done    chan struct{} // closed once the process has exited and its output is flushed
	waitErr error         // the result of cmd.Wait, valid once done is closed
}

// startProcess starts bin with args, in an environment of its own with HOME home (see
// internal/testenv): nothing of the test process's, such as the ETCD_* variables that etcd would
// read as flags or a KUBECONFIG, reaches a component. Its output is appended to logPath and, when
// extra is not nil, copied line by line to extra with prefix in front of each line. A detached
// process leads a session and process group of its own and outlives the caller (see Options.Detach).
func startProcess(name, bin string, args []string, home, logPath string, extra io.Writer, prefix string, detach bool) (*process, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	env, err := testenv.Build(testenv.Options{Home: home})
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = componentProcAttr()
	if detach {
		cmd.SysProcAttr = detachedProcAttr()
	}
	// If a component leaves a descendant holding its output open, give up on the output rather
	// than hanging in Wait.
	cmd.WaitDelay = 5 * time.Second

	var lines *lineWriter
	if extra != nil {
		lines = &lineWriter{w: extra, prefix: prefix}
		cmd.Stdout = io.MultiWriter(logFile, lines)
	} else {
		cmd.Stdout = logFile
	}
	cmd.Stderr = cmd.Stdout

	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: logFile, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		if lines != nil {
			lines.flush()
		}
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes an exit that nobody asked for, with the tail of the component's log.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s",
		p.name, p.waitErr, p.logPath, p.logTail())
}

// stop sends SIGTERM, then SIGKILL if the process is still running after grace, and waits for it
// to exit. It returns an error only if the process had already exited on its own.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return p.exitError()
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		// Signals are not supported everywhere; fall back to killing.
		_ = p.cmd.Process.Kill()
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// logTailLines is how many lines of a component's log an error includes.
const logTailLines = 30

// logTail returns the last lines of the component's log file.
func (p *process) logTail() string {
	return fileTail(p.logPath, logTailLines)
}

// fileTail returns up to n last lines of the file at path, reading at most its last 64 KiB.
func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	if info, err := f.Stat(); err == nil && info.Size() > maxRead {
		if _, err := f.Seek(info.Size()-maxRead, io.SeekStart); err != nil {
			return fmt.Sprintf("(cannot read log: %v)", err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logMu serializes writes to Options.LogWriter, which several components, possibly of several
// clusters, share.
var logMu sync.Mutex

// lineWriter copies whole lines to w, each preceded by prefix.
type lineWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

// Write buffers p and writes every completed line. It never fails, so that a broken LogWriter
// cannot block or kill a component.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	i := bytes.LastIndexByte(l.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(l.buf[:i+1], []byte("\n")) {
		if len(line) > 0 {
			out.WriteString(l.prefix)
			out.Write(line)
		}
	}
	l.buf = append(l.buf[:0], l.buf[i+1:]...)
	logMu.Lock()
	_, _ = l.w.Write(out.Bytes())
	logMu.Unlock()
	return len(p), nil
}

// flush writes a final line that has no newline.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		_, _ = l.Write([]byte("\n"))
	}
}
