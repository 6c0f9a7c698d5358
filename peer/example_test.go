package peer_test

import (
	"errors"
	"fmt"

	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/peer"
)

func ExampleMissingPortError() {
	_, err := consumer.New("cl-consumer", consumer.Ports{}, nil)
	var missing *peer.MissingPortError
	if errors.As(err, &missing) {
		fmt.Println(missing.Field, errors.Is(err, peer.ErrInvalidConfig))
	}
	// Output:
	// Core.Namespaces true
}
