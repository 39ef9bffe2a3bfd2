// s3load: a small, honest S3 load generator (aws-sdk-go-v2) used by bench/gateway_vs_versitygw.sh and
// bench/put_cpu.sh to drive every gateway with exactly the same client. Each worker has its own
// keys; PUT bodies are random bytes made once. Prints one JSON line per run.
//
// -enc chooses how PUT bodies are sent, each exactly as a real client library sends it:
//
//	unsigned          aws-sdk-go-v2, UNSIGNED-PAYLOAD with a Content-Length (default; little client CPU)
//	signed            aws-sdk-go-v2, hex SHA-256 of the body in x-amz-content-sha256 (signed single payload)
//	trailer-crc32     aws-sdk-go-v2, STREAMING-UNSIGNED-PAYLOAD-TRAILER with an x-amz-checksum-crc32
//	trailer-crc32c    trailer (64 KiB chunks), as the SDK sends over TLS (requests go out as https
//	trailer-crc64nvme URLs, and a transport sends them in plain text: the SDK uses trailers only
//	                  over TLS; the signature covers host and path, not the scheme)
//	chunked           minio-go (the library warp uses), STREAMING-AWS4-HMAC-SHA256-PAYLOAD (64 KiB chunks)
//	chunked-trailer   minio-go with TrailingHeaders, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER (CRC32C)
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
	"net/url"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	mcreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// plainHTTP sends https:// requests in plain text (see -enc trailer-*).
type plainHTTP struct{ rt http.RoundTripper }

func (p plainHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := r.Clone(r.Context())
	r2.URL.Scheme = "http"
	return p.rt.RoundTrip(r2)
}

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
	enc := flag.String("enc", "unsigned", "PUT body encoding: unsigned | signed | trailer-crc32 | trailer-crc32c | trailer-crc64nvme | chunked | chunked-trailer")
	flag.Parse()

	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        *conc * 2,
		MaxIdleConnsPerHost: *conc * 2,
		MaxConnsPerHost:     *conc * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	calc := aws.RequestChecksumCalculationWhenRequired
	var algo types.ChecksumAlgorithm
	var httpc interface {
		Do(*http.Request) (*http.Response, error)
	} = &http.Client{Transport: tr}
	sdkEndpoint := *endpoint
	switch *enc {
	case "unsigned", "signed", "chunked", "chunked-trailer":
	case "trailer-crc32", "trailer-crc32c", "trailer-crc64nvme":
		calc = aws.RequestChecksumCalculationWhenSupported
		algo = map[string]types.ChecksumAlgorithm{"trailer-crc32": types.ChecksumAlgorithmCrc32,
			"trailer-crc32c": types.ChecksumAlgorithmCrc32c, "trailer-crc64nvme": types.ChecksumAlgorithmCrc64nvme}[*enc]
		httpc = &http.Client{Transport: plainHTTP{tr}}
		if len(sdkEndpoint) > 7 && sdkEndpoint[:7] == "http://" {
			sdkEndpoint = "https://" + sdkEndpoint[7:]
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown -enc", *enc)
		os.Exit(2)
	}
	cli := s3.New(s3.Options{
		BaseEndpoint:               &sdkEndpoint,
		Region:                     "us-east-1",
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(*ak, *sk, ""),
		HTTPClient:                 httpc,
		RequestChecksumCalculation: calc,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           1,
	}, func(o *s3.Options) {
		if *enc == "unsigned" {
			o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
		}
	})
	var mc *minio.Client
	var mcsum minio.ChecksumType // chunked-trailer: minio-go adds a trailer only when asked for a checksum
	if *enc == "chunked-trailer" {
		mcsum = minio.ChecksumCRC32C
	}
	if *enc == "chunked" || *enc == "chunked-trailer" {
		u, err := url.Parse(*endpoint)
		if err != nil {
			fmt.Fprintln(os.Stderr, "endpoint:", err)
			os.Exit(2)
		}
		mc, err = minio.New(u.Host, &minio.Options{Creds: mcreds.NewStaticV4(*ak, *sk, ""), Secure: false,
			Region: "us-east-1", Transport: tr, TrailingHeaders: *enc == "chunked-trailer", BucketLookup: minio.BucketLookupPath})
		if err != nil {
			fmt.Fprintln(os.Stderr, "minio client:", err)
			os.Exit(2)
		}
	}
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
					if mc != nil {
						_, err = mc.PutObject(ctx, *bucket, key(w, i), bytes.NewReader(body), int64(*size),
							minio.PutObjectOptions{DisableMultipart: true, Checksum: mcsum})
					} else {
						_, err = cli.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key(w, i)),
							Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(*size)), ChecksumAlgorithm: algo})
					}
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
