package kube

import (
	"errors"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ErrNoServer reports a rest.Config without an API server host (or a nil
// one).
var ErrNoServer = errors.New("rest config names no API server")

// NewClientset returns a clientset for cfg over httpClient (nil makes one
// from cfg) that sends and accepts protobuf, as the control plane's own
// controllers do, unless cfg names a content type: the API server encodes
// and decodes it at a fraction of JSON's cost. The clientset serves only
// built-in kinds, which all speak protobuf; the authentication.liqo.io
// kinds go through NewClient, which speaks JSON to them.
func NewClientset(cfg *rest.Config, httpClient *http.Client) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.ContentType == "" {
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	if httpClient == nil {
		return kubernetes.NewForConfig(cfg)
	}
	return kubernetes.NewForConfigAndClient(cfg, httpClient)
}
