package main

// Object-level parity checks: tagging, copy directives and the website redirect location,
// DeleteObjects, conditional GET/PUT, RenameObject client tokens.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func put(ctx context.Context, c *s3.Client, in *s3.PutObjectInput, body string) error {
	in.Body = strings.NewReader(body)
	_, err := c.PutObject(ctx, in)
	return err
}

func readAll(ctx context.Context, c *s3.Client, bucket, key string) (string, error) {
	g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return "", err
	}
	defer g.Body.Close()
	b, err := io.ReadAll(g.Body)
	return string(b), err
}

func objectChecks(ctx context.Context, c *s3.Client, bucket string, check func(string, error)) {
	check("object-and-bucket-tagging", func() error {
		key := aws.String("go/tags")
		if err := put(ctx, c, &s3.PutObjectInput{Bucket: &bucket, Key: key}, "t"); err != nil {
			return err
		}
		tags := &types.Tagging{TagSet: []types.Tag{{Key: aws.String("z"), Value: aws.String("1")},
			{Key: aws.String("b"), Value: aws.String("")}}}
		if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &bucket, Key: key, Tagging: tags}); err != nil {
			return err
		}
		t, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: key})
		if err != nil {
			return err
		}
		if len(t.TagSet) != 2 || *t.TagSet[0].Key != "b" || *t.TagSet[1].Value != "1" {
			return fmt.Errorf("tags %v", t.TagSet)
		}
		if _, err := c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: &bucket, Key: key}); err != nil {
			return err
		}
		if t, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: key}); err != nil || len(t.TagSet) != 0 {
			return fmt.Errorf("after delete: %v %v", t, err)
		}
		if _, err := c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: &bucket, Tagging: tags}); err != nil {
			return err
		}
		bt, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: &bucket})
		if err != nil || len(bt.TagSet) != 2 || *bt.TagSet[0].Key != "b" {
			return fmt.Errorf("bucket tags %v %v", bt, err)
		}
		_, err = c.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: &bucket})
		return err
	}())

	check("copy-directives-and-redirect", func() error {
		src := bucket + "/go/copy-src"
		err := put(ctx, c, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("go/copy-src"),
			ContentType: aws.String("text/html"), Metadata: map[string]string{"m": "1"}, Tagging: aws.String("t=1"),
			WebsiteRedirectLocation: aws.String("/src.html")}, "copied")
		if err != nil {
			return err
		}
		// COPY: metadata and tags carried, the redirect not (the request's applies).
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("go/copy1"), CopySource: &src,
			WebsiteRedirectLocation: aws.String("https://example.org/new")}); err != nil {
			return err
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("go/copy1")})
		if err != nil {
			return err
		}
		if h.Metadata["m"] != "1" || aws.ToString(h.ContentType) != "text/html" ||
			aws.ToString(h.WebsiteRedirectLocation) != "https://example.org/new" {
			return fmt.Errorf("COPY: %v %v %v", h.Metadata, aws.ToString(h.ContentType), aws.ToString(h.WebsiteRedirectLocation))
		}
		// REPLACE for both: the request's metadata and tags, no redirect.
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("go/copy2"), CopySource: &src,
			MetadataDirective: types.MetadataDirectiveReplace, Metadata: map[string]string{"n": "2"},
			TaggingDirective: types.TaggingDirectiveReplace, Tagging: aws.String("u=2")}); err != nil {
			return err
		}
		h, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("go/copy2")})
		if err != nil {
			return err
		}
		if len(h.Metadata) != 1 || h.Metadata["n"] != "2" || h.WebsiteRedirectLocation != nil {
			return fmt.Errorf("REPLACE: %v %v", h.Metadata, aws.ToString(h.WebsiteRedirectLocation))
		}
		t, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: aws.String("go/copy2")})
		if err != nil || len(t.TagSet) != 1 || *t.TagSet[0].Key != "u" {
			return fmt.Errorf("tags %v %v", t, err)
		}
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: aws.String("go/copy3"), CopySource: &src,
			MetadataDirective: types.MetadataDirective("MOVE")})
		if code, msg, status := apiError(err); code != "InvalidArgument" || status != 400 || msg != "Unknown metadata directive." {
			return fmt.Errorf("unknown directive: %v", err)
		}
		return nil
	}())

	check("delete-objects", func() error {
		for _, k := range []string{"go/del1", "go/del2"} {
			if err := put(ctx, c, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(k)}, "d"); err != nil {
				return err
			}
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
			{Key: aws.String("go/del1")}, {Key: aws.String("go/del2")}, {Key: aws.String("go/never")}}}})
		if err != nil {
			return err
		}
		if len(out.Deleted) != 3 || len(out.Errors) != 0 {
			return fmt.Errorf("deleted %d, errors %v", len(out.Deleted), out.Errors)
		}
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("go/del1")})
		if _, _, status := apiError(err); status != 404 {
			return fmt.Errorf("head after delete: %v", err)
		}
		return nil
	}())

	check("conditional-get-put", func() error {
		key := aws.String("go/cond")
		if err := put(ctx, c, &s3.PutObjectInput{Bucket: &bucket, Key: key, IfNoneMatch: aws.String("*")}, "v1"); err != nil {
			return err
		}
		err := put(ctx, c, &s3.PutObjectInput{Bucket: &bucket, Key: key, IfNoneMatch: aws.String("*")}, "v2")
		if code, _, status := apiError(err); code != "PreconditionFailed" || status != 412 {
			return fmt.Errorf("If-None-Match * on an existing key: %v", err)
		}
		err = put(ctx, c, &s3.PutObjectInput{Bucket: &bucket, Key: key, IfMatch: aws.String(`"0123456789abcdef0123456789abcdef"`)}, "v2")
		if code, _, status := apiError(err); code != "PreconditionFailed" || status != 412 {
			return fmt.Errorf("If-Match another ETag: %v", err)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: key})
		if err != nil {
			return err
		}
		if err := put(ctx, c, &s3.PutObjectInput{Bucket: &bucket, Key: key, IfMatch: h.ETag}, "v2"); err != nil {
			return fmt.Errorf("If-Match the ETag: %v", err)
		}
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: key, IfMatch: h.ETag})
		if code, _, status := apiError(err); code != "PreconditionFailed" || status != 412 {
			return fmt.Errorf("GET If-Match the old ETag: %v", err)
		}
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: key, IfModifiedSince: aws.Time(h.LastModified.AddDate(1, 0, 0))})
		var re *smithyhttp.ResponseError
		if !errors.As(err, &re) || re.HTTPStatusCode() != 304 {
			return fmt.Errorf("GET If-Modified-Since the future: %v", err)
		}
		if got, err := readAll(ctx, c, bucket, "go/cond"); err != nil || got != "v2" {
			return fmt.Errorf("content %q %v", got, err)
		}
		return nil
	}())

	check("rename-client-token", func() error {
		if err := put(ctx, c, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("go/ren-a")}, "first"); err != nil {
			return err
		}
		in := &s3.RenameObjectInput{Bucket: &bucket, Key: aws.String("go/ren-b"), RenameSource: aws.String(bucket + "/go/ren-a"),
			ClientToken: aws.String("go-token-1")}
		if _, err := c.RenameObject(ctx, in); err != nil {
			return err
		}
		// The retry (as the SDK sends it after a lost answer): 200, nothing renamed again.
		if err := put(ctx, c, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("go/ren-a")}, "second"); err != nil {
			return err
		}
		if _, err := c.RenameObject(ctx, in); err != nil {
			return fmt.Errorf("retry: %v", err)
		}
		if got, err := readAll(ctx, c, bucket, "go/ren-b"); err != nil || got != "first" {
			return fmt.Errorf("destination %q %v", got, err)
		}
		_, err := c.RenameObject(ctx, &s3.RenameObjectInput{Bucket: &bucket, Key: aws.String("go/ren-c"),
			RenameSource: aws.String(bucket + "/go/ren-a"), ClientToken: aws.String("go-token-1")})
		if code, _, status := apiError(err); code != "IdempotencyParameterMismatch" || status != 400 {
			return fmt.Errorf("token reused: %v", err)
		}
		return nil
	}())
}

// multipartChecks: ListParts, ListMultipartUploads and GetObjectAttributes of a COMPOSITE upload.
func multipartChecks(ctx context.Context, c *s3.Client, bucket string, check func(string, error)) {
	check("multipart-checksums-and-attributes", func() error {
		key := aws.String("go/comp")
		sha := types.ChecksumAlgorithmSha256
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: key, ChecksumAlgorithm: sha})
		if err != nil {
			return err
		}
		ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: key})
		if err != nil || len(ups.Uploads) != 1 || ups.Uploads[0].ChecksumAlgorithm != sha ||
			ups.Uploads[0].ChecksumType != types.ChecksumTypeComposite {
			return fmt.Errorf("ListMultipartUploads %v %v", ups, err)
		}
		bodies := [][]byte{bytes.Repeat([]byte("p"), 5<<20), []byte("last part")}
		var parts []types.CompletedPart
		for i, b := range bodies {
			p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: key, UploadId: up.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(b), ChecksumAlgorithm: sha})
			if err != nil {
				return err
			}
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: p.ETag, ChecksumSHA256: p.ChecksumSHA256})
		}
		lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: &bucket, Key: key, UploadId: up.UploadId})
		if err != nil || lp.ChecksumType != types.ChecksumTypeComposite || len(lp.Parts) != 2 ||
			aws.ToString(lp.Parts[1].ChecksumSHA256) != aws.ToString(parts[1].ChecksumSHA256) {
			return fmt.Errorf("ListParts %v %v", lp, err)
		}
		done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: key, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
		if err != nil {
			return err
		}
		if done.ChecksumType != types.ChecksumTypeComposite || !strings.HasSuffix(aws.ToString(done.ChecksumSHA256), "-2") {
			return fmt.Errorf("complete: %v %v", done.ChecksumType, aws.ToString(done.ChecksumSHA256))
		}
		a, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &bucket, Key: key,
			ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesChecksum, types.ObjectAttributesObjectParts,
				types.ObjectAttributesObjectSize}})
		if err != nil {
			return err
		}
		if a.Checksum == nil || aws.ToString(a.Checksum.ChecksumSHA256)+"-2" != aws.ToString(done.ChecksumSHA256) ||
			a.Checksum.ChecksumType != types.ChecksumTypeComposite {
			return fmt.Errorf("attributes checksum %+v", a.Checksum)
		}
		op := a.ObjectParts
		if op == nil || aws.ToInt32(op.TotalPartsCount) != 2 || len(op.Parts) != 2 ||
			aws.ToString(op.Parts[0].ChecksumSHA256) != aws.ToString(parts[0].ChecksumSHA256) ||
			aws.ToInt64(op.Parts[1].Size) != int64(len(bodies[1])) {
			return fmt.Errorf("attributes parts %+v", op)
		}
		// GET of part 2 with checksum mode: the part's checksum, which the SDK verifies.
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: key, PartNumber: aws.Int32(2),
			ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			return err
		}
		b, err := io.ReadAll(g.Body)
		g.Body.Close()
		if err != nil || string(b) != "last part" || aws.ToString(g.ChecksumSHA256) != aws.ToString(parts[1].ChecksumSHA256) {
			return fmt.Errorf("part 2: %q %v %v", b, aws.ToString(g.ChecksumSHA256), err)
		}
		return nil
	}())
}
