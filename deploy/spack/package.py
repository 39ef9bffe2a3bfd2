# Spack package recipe for s3hpc. Copy this directory into a Spack repository as
# packages/s3hpc/package.py (`spack repo create` makes one), point `git` below at the site's
# copy of the s3hpc repository, and `spack install s3hpc`. Not exercised in s3hpc's CI (no Spack
# there); the build it runs is the one CI tests: `scripts/install --prefix`.
from spack.package import *


class S3hpc(Package):
    """S3 served from POSIX parallel file systems (buckets are directories, objects are plain
    files), a FUSE mount of any S3 store, S3 benchmarks, and a libs3 drop-in (libs3.so.4) that
    lets libs3 programs such as IOR use s3hpc unchanged."""

    # EDIT: s3hpc has no public home yet; point both at the site's copy of the repository.
    homepage = "https://git.example.org/hpc/s3hpc"
    git = "https://git.example.org/hpc/s3hpc.git"

    license("Apache-2.0")

    version("main", branch="main")

    variant("mpi", default=False, description="s3hpc bench runs ranks under MPI (mpirun)")

    depends_on("rust@1.95:", type="build")
    # `s3hpc mount` runs fusermount3 (it does not link libfuse); Spack names FUSE `libfuse`
    # (there is no `fuse` package, so a `fuse@3:` dependency constrained nothing).
    depends_on("libfuse@3:", type="run")
    depends_on("mpi", when="+mpi")

    def install(self, spec, prefix):
        env["CARGO_HOME"] = join_path(self.stage.path, ".cargo")
        features = ["--features", "s3hpc/mpi"] if spec.satisfies("+mpi") else []
        cargo = which("cargo")
        cargo("build", "--release", "--locked", "-p", "s3hpc", "-p", "s3hpc-libs3", *features)
        install_script = Executable(join_path(self.stage.source_path, "scripts", "install"))
        install_script("--prefix", prefix, "--no-build")

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_version(self):
        Executable(join_path(self.prefix.bin, "s3hpc"))("--version")
