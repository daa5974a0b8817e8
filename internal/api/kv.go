package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/ndbench/ndbench/driver"
)

// The debugging routes that read and write one key through the driver.

// KVBody is one stored value.
type KVBody struct {
	Key   string `json:"key"`
	Value []byte `json:"value" doc:"The stored bytes, base64"`
	Size  int    `json:"size" doc:"Length of the value in bytes"`
}

// KVPut writes one value.
type KVPut struct {
	Value []byte `json:"value" doc:"Bytes to store, base64 (standard alphabet, padded)"`
}

type keyPath struct {
	Key string `path:"key" minLength:"1" maxLength:"1024" doc:"Key, e.g. T42"`
}

func (s *Server) readKey(ctx context.Context, in *keyPath) (*out[KVBody], error) {
	v, err := s.inst.Read(ctx, in.Key)
	if err != nil {
		if errors.Is(err, driver.ErrNotFound) {
			return nil, newProblem(http.StatusNotFound, "key "+strconv.Quote(in.Key)+" not found")
		}
		return nil, storeProblem(err)
	}
	return &out[KVBody]{KVBody{Key: in.Key, Value: v, Size: len(v)}}, nil
}

func (s *Server) writeKey(ctx context.Context, in *struct {
	Key  string `path:"key" minLength:"1" maxLength:"1024" doc:"Key, e.g. T42"`
	Body KVPut
}) (*struct{}, error) {
	if err := s.inst.Write(ctx, in.Key, in.Body.Value); err != nil {
		return nil, storeProblem(err)
	}
	return &struct{}{}, nil
}
