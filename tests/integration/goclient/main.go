// A small aws-sdk-go-v2 client for the integration suite: each check drives the gateway as a Go
// program would and prints "ok <name>" or "FAIL <name>: <why>"; the exit status is non-zero when
// any check fails. Usage: goclient ENDPOINT ACCESS_KEY SECRET_KEY BUCKET
package main

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func apiError(err error) (string, string, int) {
	var ae smithy.APIError
	code, msg, status := "", "", 0
	if errors.As(err, &ae) {
		code, msg = ae.ErrorCode(), ae.ErrorMessage()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, msg, status
}

func main() {
	endpoint, ak, sk, bucket := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	ctx := context.Background()
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
	})
	failed := false
	check := func(name string, err error) {
		if err != nil {
			failed = true
			fmt.Printf("FAIL %s: %v\n", name, err)
		} else {
			fmt.Printf("ok %s\n", name)
		}
	}

	check("put-get-tagging-count", func() error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("go/a"),
			Body: bytes.NewReader([]byte("hello go")), Tagging: aws.String("z=1&a=2")})
		if err != nil {
			return err
		}
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("go/a")})
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(g.Body)
		g.Body.Close()
		if string(b) != "hello go" || aws.ToInt32(g.TagCount) != 2 {
			return fmt.Errorf("body %q tag count %d", b, aws.ToInt32(g.TagCount))
		}
		t, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: aws.String("go/a")})
		if err != nil {
			return err
		}
		if len(t.TagSet) != 2 || *t.TagSet[0].Key != "a" {
			return fmt.Errorf("tags not in key order: %v", t.TagSet)
		}
		return nil
	}())

	check("listv2-pages-and-junk-token", func() error {
		for _, k := range []string{"go/b", "go/c", "go/d"} {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(k),
				Body: strings.NewReader("x")}); err != nil {
				return err
			}
		}
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String("go/"),
			MaxKeys: aws.Int32(2)})
		var keys []string
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			for _, o := range page.Contents {
				keys = append(keys, *o.Key)
			}
		}
		if strings.Join(keys, ",") != "go/a,go/b,go/c,go/d" {
			return fmt.Errorf("keys %v", keys)
		}
		// The base64 of a key is not a token this server wrote.
		_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, ContinuationToken: aws.String("Z28vYg==")})
		code, msg, status := apiError(err)
		if code != "InvalidArgument" || status != 400 || msg != "The continuation token provided is incorrect" {
			return fmt.Errorf("junk token: %v", err)
		}
		return nil
	}())

	check("part-number-beyond-parts", func() error {
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("go/a"), PartNumber: aws.Int32(2)})
		if code, _, status := apiError(err); code != "InvalidPartNumber" || status != 416 {
			return fmt.Errorf("got %v", err)
		}
		return nil
	}())

	check("not-modified-etag", func() error {
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("go/a")})
		if err != nil {
			return err
		}
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("go/a"), IfNoneMatch: h.ETag})
		var re *smithyhttp.ResponseError
		if !errors.As(err, &re) || re.HTTPStatusCode() != 304 {
			return fmt.Errorf("got %v", err)
		}
		if got := re.Response.Header.Get("ETag"); got != *h.ETag {
			return fmt.Errorf("304 ETag %q, want %q", got, *h.ETag)
		}
		return nil
	}())

	check("list-buckets-pages", func() error {
		extra := []string{bucket + "-p1", bucket + "-p2"}
		for _, b := range extra {
			if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
				return err
			}
			defer c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)})
		}
		p := s3.NewListBucketsPaginator(c, &s3.ListBucketsInput{MaxBuckets: aws.Int32(1), Prefix: aws.String(bucket)})
		var names []string
		pages := 0
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			pages++
			for _, b := range out.Buckets {
				names = append(names, *b.Name)
			}
		}
		if want := bucket + "," + strings.Join(extra, ","); strings.Join(names, ",") != want || pages != 3 {
			return fmt.Errorf("buckets %v in %d pages", names, pages)
		}
		return nil
	}())

	check("sha512-put-verified", func() error {
		key := aws.String("go/sha512")
		data := []byte("data")
		wrong := base64.StdEncoding.EncodeToString(make([]byte, sha512.Size))
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: key,
			Body: bytes.NewReader(data), ChecksumSHA512: aws.String(wrong)})
		if code, _, status := apiError(err); code != "BadDigest" || status != 400 {
			return fmt.Errorf("wrong value: got %v", err)
		}
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: key}); err == nil {
			return fmt.Errorf("object was stored")
		}
		sum := sha512.Sum512(data)
		want := base64.StdEncoding.EncodeToString(sum[:])
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: key,
			Body: bytes.NewReader(data), ChecksumSHA512: aws.String(want)})
		if err != nil {
			return err
		}
		if aws.ToString(out.ChecksumSHA512) != want {
			return fmt.Errorf("put answered %v", out.ChecksumSHA512)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: key, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			return err
		}
		if aws.ToString(h.ChecksumSHA512) != want || h.ChecksumType != types.ChecksumTypeFullObject {
			return fmt.Errorf("head answered %v %v", h.ChecksumSHA512, h.ChecksumType)
		}
		return nil
	}())

	check("crc32-put-verified", func() error {
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("go/crc"),
			Body: bytes.NewReader([]byte("checksummed")), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
		if err != nil {
			return err
		}
		if out.ChecksumCRC32 == nil || aws.ToInt64(out.Size) != 11 {
			return fmt.Errorf("crc %v size %v", out.ChecksumCRC32, out.Size)
		}
		return nil
	}())

	check("complete-retried-same-200", func() error {
		key := aws.String("go/mpu")
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: key})
		if err != nil {
			return err
		}
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: key, UploadId: up.UploadId,
			PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("one part"))})
		if err != nil {
			return err
		}
		done := &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p.ETag}}}
		in := &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: key, UploadId: up.UploadId, MultipartUpload: done}
		first, err := c.CompleteMultipartUpload(ctx, in)
		if err != nil {
			return err
		}
		again, err := c.CompleteMultipartUpload(ctx, in)
		if err != nil {
			return fmt.Errorf("retry: %v", err)
		}
		if aws.ToString(first.ETag) != aws.ToString(again.ETag) {
			return fmt.Errorf("etags %v vs %v", aws.ToString(first.ETag), aws.ToString(again.ETag))
		}
		return nil
	}())

	check("presigned-post-object", func() error {
		key := "go/posted"
		pp, err := s3.NewPresignClient(c).PresignPostObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			return err
		}
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		for k, v := range pp.Values {
			if err := w.WriteField(k, v); err != nil {
				return err
			}
		}
		f, err := w.CreateFormFile("file", "posted.txt")
		if err != nil {
			return err
		}
		f.Write([]byte("posted by go"))
		w.Close()
		resp, err := http.Post(pp.URL, w.FormDataContentType(), &body)
		if err != nil {
			return err
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 204 {
			return fmt.Errorf("POST %s: %d %s", pp.URL, resp.StatusCode, out)
		}
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(g.Body)
		if string(data) != "posted by go" {
			return fmt.Errorf("content %q", data)
		}
		return nil
	}())

	check("versioning", func() error {
		vb := bucket + "-v"
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(vb)}); err != nil {
			return err
		}
		defer func() {
			vs, _ := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(vb)})
			if vs != nil {
				for _, v := range vs.Versions {
					c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(vb), Key: v.Key, VersionId: v.VersionId})
				}
				for _, m := range vs.DeleteMarkers {
					c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(vb), Key: m.Key, VersionId: m.VersionId})
				}
			}
			c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(vb)})
		}()
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(vb),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
			return err
		}
		st, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(vb)})
		if err != nil || st.Status != types.BucketVersioningStatusEnabled {
			return fmt.Errorf("state %v, %v", st, err)
		}
		var ids []string
		for _, body := range []string{"one", "two"} {
			out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(vb), Key: aws.String("k"),
				Body: strings.NewReader(body)})
			if err != nil {
				return err
			}
			ids = append(ids, aws.ToString(out.VersionId))
		}
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(vb), Key: aws.String("k"), VersionId: &ids[0]})
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(g.Body)
		g.Body.Close()
		if string(b) != "one" || aws.ToString(g.VersionId) != ids[0] {
			return fmt.Errorf("old version: %q %v", b, g.VersionId)
		}
		d, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(vb), Key: aws.String("k")})
		if err != nil || !aws.ToBool(d.DeleteMarker) {
			return fmt.Errorf("delete: %v %v", d, err)
		}
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(vb), Key: aws.String("k")})
		if code, _, status := apiError(err); code != "NoSuchKey" || status != 404 {
			return fmt.Errorf("get after delete: %v", err)
		}
		p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String(vb), MaxKeys: aws.Int32(1)})
		n, markers := 0, 0
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			n += len(page.Versions)
			markers += len(page.DeleteMarkers)
		}
		if n != 2 || markers != 1 {
			return fmt.Errorf("%d versions, %d markers", n, markers)
		}
		return nil
	}())

	objectChecks(ctx, c, bucket, check)
	multipartChecks(ctx, c, bucket, check)

	check("object-lock-retention", func() error {
		lb := bucket + "-lock"
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(lb),
			ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
			return err
		}
		put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(lb), Key: aws.String("k"),
			Body: strings.NewReader("locked"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
		if err != nil {
			return err
		}
		until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String(lb),
			Key: aws.String("k"), VersionId: put.VersionId, Retention: &types.ObjectLockRetention{
				Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: &until}}); err != nil {
			return err
		}
		got, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String(lb),
			Key: aws.String("k"), VersionId: put.VersionId})
		if err != nil {
			return err
		}
		if got.Retention.Mode != types.ObjectLockRetentionModeGovernance || !got.Retention.RetainUntilDate.Equal(until) {
			return fmt.Errorf("retention %v %v", got.Retention.Mode, got.Retention.RetainUntilDate)
		}
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(lb), Key: aws.String("k"),
			VersionId: put.VersionId})
		if code, _, status := apiError(err); code != "AccessDenied" || status != 403 {
			return fmt.Errorf("delete of a locked version: %v", err)
		}
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(lb), Key: aws.String("k"),
			VersionId: put.VersionId, BypassGovernanceRetention: aws.Bool(true)}); err != nil {
			return fmt.Errorf("delete with the bypass: %v", err)
		}
		_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(lb)})
		return err
	}())

	if failed {
		os.Exit(1)
	}
}
