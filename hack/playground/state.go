//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stateFile is the state directory's record of what up started.
const stateFile = "state.json"

// state is what up started: enough for status to print and for down to stop it all.
type state struct {
	dir string
	// Up says that up finished: everything runs.
	Up bool `json:"up"`
	// CLI is the kubepact CLI up built.
	CLI string `json:"cli"`
	// Clusters are the provider and the consumer, in that order.
	Clusters []cluster `json:"clusters"`
}

// cluster is one playground cluster.
type cluster struct {
	Name string `json:"name"`
	// Kubeconfig is the admin kubeconfig, a member of system:masters.
	Kubeconfig string `json:"kubeconfig"`
	// Processes are the control plane's, then the controller, in start order.
	Processes []process `json:"processes"`
}

// process is one process up started, the leader of its own session and process group.
type process struct {
	Cluster string `json:"-"`
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	// Exe is the program's path: a process of another program under PID is not ours.
	Exe string `json:"exe"`
	Log string `json:"log"`
}

func load(dir string) (*state, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	st := &state{dir: dir}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

// save writes the state atomically, so that down always reads a whole one.
func (st *state) save() error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(st.dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(st.dir, stateFile))
}

// processes returns every recorded process, in start order.
func (st *state) processes() []process {
	var all []process
	for _, c := range st.Clusters {
		for _, p := range c.Processes {
			p.Cluster = c.Name
			all = append(all, p)
		}
	}
	return all
}

// printCommands prints the commands to peer, inspect and unpeer, as a user types them.
func (st *state) printCommands() {
	provider, consumer := st.Clusters[0].Kubeconfig, st.Clusters[1].Kubeconfig
	cli := quote(st.CLI)
	fmt.Printf(`
Admin kubeconfigs: provider %s
                   consumer %s
Peer (the consumer gets an identity on the provider), inspect, unpeer:

  %s authenticate --kubeconfig %s --remote-kubeconfig %s
  %s status --kubeconfig %s
  %s unauthenticate --kubeconfig %s --remote-kubeconfig %s

`, provider, consumer, cli, quote(consumer), quote(provider), cli, quote(consumer), cli, quote(consumer), quote(provider))
}

// quote quotes s for a POSIX shell when it holds anything but safe characters.
func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// alive reports whether the process still runs the program recorded: not gone, not a zombie,
// and not another program that was given the same PID since.
func (p process) alive() bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat")
	if err != nil {
		return false
	}
	// The state is the field after the command name, which is in parentheses.
	if i := strings.LastIndexByte(string(stat), ')'); i < 0 || strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z") {
		return false
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/exe")
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == p.Exe
}

// stopAll stops the processes: the controllers first, so that they release their Leases while
// the API servers answer, then the control planes, whose data goes with the state directory:
// they get less time to shut down cleanly. See stopGroups.
func stopAll(procs []process) {
	var controllers, planes []process
	for _, p := range procs {
		if p.Name == controllerName {
			controllers = append(controllers, p)
		} else {
			planes = append(planes, p)
		}
	}
	stopGroups(controllers, 15*time.Second)
	stopGroups(planes, 3*time.Second)
}

// stopGroups sends SIGTERM to each process's group, then SIGKILL to those still running after
// grace, and returns once none runs.
func stopGroups(procs []process, grace time.Duration) {
	signalAll := func(sig syscall.Signal) {
		for _, p := range procs {
			if p.alive() {
				_ = syscall.Kill(-p.PID, sig)
			}
		}
	}
	waitAll := func(d time.Duration) bool {
		for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
			running := false
			for _, p := range procs {
				running = running || p.alive()
			}
			if !running {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
		}
	}
	signalAll(syscall.SIGTERM)
	if !waitAll(grace) {
		signalAll(syscall.SIGKILL)
		waitAll(10 * time.Second)
	}
}
