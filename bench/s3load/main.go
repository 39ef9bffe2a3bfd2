// s3load: a small, honest S3 load generator (aws-sdk-go-v2) used by bench/gateway_vs_versitygw.sh to
// drive every gateway with exactly the same client. Each worker has its own keys; PUT bodies are
// random bytes made once; requests use UNSIGNED-PAYLOAD with a Content-Length (no client-side
// hashing, so the client costs little CPU). Prints one JSON line per run.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	endpoint := flag.String("endpoint", "http://127.0.0.1:9000", "S3 endpoint")
	ak := flag.String("ak", "", "access key")
	sk := flag.String("sk", "", "secret key")
	bucket := flag.String("bucket", "bench", "bucket (created if missing)")
	op := flag.String("op", "put", "put | get | head")
	size := flag.Int("size", 1<<20, "object size in bytes")
	conc := flag.Int("c", 16, "concurrent workers")
	dur := flag.Duration("d", 10*time.Second, "run time")
	keys := flag.Int("keys", 8, "distinct keys per worker")
	flag.Parse()

	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        *conc * 2,
		MaxIdleConnsPerHost: *conc * 2,
		MaxConnsPerHost:     *conc * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	cli := s3.New(s3.Options{
		BaseEndpoint:               endpoint,
		Region:                     "us-east-1",
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(*ak, *sk, ""),
		HTTPClient:                 &http.Client{Transport: tr},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           1,
	}, func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	})
	ctx := context.Background()
	_, _ = cli.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket})

	body := make([]byte, *size)
	_, _ = rand.Read(body)
	key := func(w, i int) string { return fmt.Sprintf("obj-%d-%d-%d", *size, w, i%*keys) }
	if *op != "put" { // make the objects to read
		var wg sync.WaitGroup
		for w := 0; w < *conc; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < *keys; i++ {
					if _, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key(w, i)),
						Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(*size))}); err != nil {
						fmt.Fprintln(os.Stderr, "prepare:", err)
						os.Exit(1)
					}
				}
			}(w)
		}
		wg.Wait()
	}

	var ops, errs, bytesMoved atomic.Int64
	lats := make([][]time.Duration, *conc)
	deadline := time.Now().Add(*dur)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				var err error
				var n int64
				switch *op {
				case "put":
					_, err = cli.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key(w, i)),
						Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(*size))})
					n = int64(*size)
				case "get":
					var out *s3.GetObjectOutput
					out, err = cli.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(key(w, i))})
					if err == nil {
						n, err = io.Copy(io.Discard, out.Body)
						out.Body.Close()
						if err == nil && n != int64(*size) {
							err = fmt.Errorf("short GET: %d bytes", n)
						}
					}
				case "head":
					_, err = cli.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String(key(w, i))})
				}
				if err != nil {
					errs.Add(1)
					if errs.Load() < 5 {
						fmt.Fprintln(os.Stderr, *op, "error:", err)
					}
					continue
				}
				lats[w] = append(lats[w], time.Since(t0))
				ops.Add(1)
				bytesMoved.Add(n)
			}
		}(w)
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	res := map[string]any{
		"op": *op, "size": *size, "concurrency": *conc, "seconds": el, "ops": ops.Load(), "errors": errs.Load(),
		"ops_per_s": float64(ops.Load()) / el, "mib_per_s": float64(bytesMoved.Load()) / el / (1 << 20),
		"p50_ms": pct(0.5), "p99_ms": pct(0.99),
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}
