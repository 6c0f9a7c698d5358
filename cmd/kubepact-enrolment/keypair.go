package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// How often the key pair's files are looked at, and re-read whatever they
// look like.
const (
	statEvery   = time.Second
	reloadEvery = time.Minute
)

// keyPair is the endpoint's TLS key pair, read from its files, and read
// again when they change: the Secret is renewed, and the kubelet swaps
// the mounted files. A pair that does not load leaves the last one in
// place.
type keyPair struct {
	certFile, keyFile string
	now               func() time.Time
	log               logr.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp // of certFile and keyFile when cert was read
	checked time.Time    // when the files were last looked at
	read    time.Time    // when cert was read
	failing bool         // the last attempt failed: logged once
}

// fileStamp is what changes when a file is replaced.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(name string) fileStamp {
	fi, err := os.Stat(name)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}
}

func newKeyPair(certFile, keyFile string, now func() time.Time, log logr.Logger) *keyPair {
	return &keyPair{certFile: certFile, keyFile: keyFile, now: now, log: log}
}

// errNoKeyPair is what a handshake gets while no pair has loaded.
var errNoKeyPair = errors.New("no TLS key pair loaded")

// get returns the key pair: the one read last, unless the files changed
// (looked at once a statEvery at most) or it was read reloadEvery ago.
func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if !k.checked.IsZero() && now.Sub(k.checked) < statEvery {
		if k.cert == nil {
			return nil, errNoKeyPair
		}
		return k.cert, nil
	}
	k.checked = now
	stamp := [2]fileStamp{stampOf(k.certFile), stampOf(k.keyFile)}
	if k.cert != nil && stamp == k.stamp && now.Sub(k.read) < reloadEvery {
		return k.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		if !k.failing {
			k.failing = true
			k.log.Error(err, "loading the TLS key pair", "cert", k.certFile, "key", k.keyFile, "keptPrevious", k.cert != nil)
		}
		if k.cert == nil {
			return nil, fmt.Errorf("%w: %w", errNoKeyPair, err)
		}
		return k.cert, nil
	}
	if k.failing || k.cert == nil || cert.Leaf.SerialNumber.Cmp(k.cert.Leaf.SerialNumber) != 0 {
		k.log.Info("loaded the TLS key pair", "cert", k.certFile, "notAfter", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	k.cert, k.stamp, k.read, k.failing = &cert, stamp, now, false
	return k.cert, nil
}

// getCertificate is tls.Config.GetCertificate.
func (k *keyPair) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.get()
}

// loaded reports whether a key pair has loaded.
func (k *keyPair) loaded() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cert != nil
}
