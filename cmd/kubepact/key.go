package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/kubepact/kubepact/keys"
)

func generateKeyCommand(f *flags) runFunc {
	out := f.String("out", "", "file to write the new key to, with mode 0600 (required; an existing file is never overwritten)")
	var alg algorithmFlag
	f.Var(&alg, "algorithm", "key algorithm: ed25519, ecdsa-p256 or rsa-2048")
	return func(_ context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := required("out", *out); err != nil {
			return err
		}
		k, err := keys.Generate(nil, alg.alg)
		if err != nil {
			return err
		}
		if err := writeKeyFile(*out, k); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "Wrote %v key %s to %s\n", k.Algorithm(), keys.Fingerprint(k.Public()), *out)
		return nil
	}
}

// writeKeyFile writes k to a new file at path, readable by its owner only.
func writeKeyFile(path string, k *keys.PrivateKey) error {
	data, err := keys.MarshalPrivateKey(k)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists: kubepact never overwrites a key file; choose another --out", path)
	}
	if err != nil {
		return fmt.Errorf("writing key file: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing key file: %w", err)
	}
	return nil
}
