"""`s3hpc serve --backend noop` (the front end's capacity, used by bench/client_cpu.sh and
BENCH.md): a bucket can be made and objects written and read through the authorized gateway."""

from conftest import ACCESS_KEY, SECRET_KEY, Server, make_client


def test_noop_gateway_creates_buckets_and_serves_objects(tmp_path):
    srv = Server(tmp_path / "root", ["--backend", "noop", "--noop-object-size", "4096",
                                     "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
    try:
        s3 = make_client(srv.endpoint)
        # Authorization keeps the bucket's owner in a configuration document: the noop store
        # must keep those, or CreateBucket answers NotImplemented.
        s3.create_bucket(Bucket="noop-bucket")
        s3.put_object(Bucket="noop-bucket", Key="k", Body=b"x" * 1000)
        body = s3.get_object(Bucket="noop-bucket", Key="k")["Body"].read()
        assert body == bytes(4096)
        s3.delete_object(Bucket="noop-bucket", Key="k")
    finally:
        assert srv.stop() == 0
