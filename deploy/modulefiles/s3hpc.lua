-- Lmod module file for s3hpc @VERSION@. scripts/install writes it, with the prefix filled in, to
-- PREFIX/share/modulefiles/s3hpc/@VERSION@.lua; `module use PREFIX/share/modulefiles` (or copy
-- the file into the site's module tree) and `module load s3hpc`.
help([[
s3hpc @VERSION@: S3 served from a POSIX parallel file system (buckets are directories, objects
are plain files), a FUSE mount of any S3 store, and S3 benchmarks the way HPC measures storage.

  s3hpc serve ROOT ...          the S3 gateway
  s3hpc mount BUCKET DIR ...    a bucket as a directory
  s3hpc bench ...               benchmarks
  LD_LIBRARY_PATH holds libs3.so.4: libs3 programs (IOR -a S3-libs3) use s3hpc unchanged;
  set S3HPC_TARGET (file:///path, unix:///socket, http://host:port). With mpirun, pass it on:
  mpirun -x LD_LIBRARY_PATH -x S3HPC_TARGET ...

Documentation: @PREFIX@/share/doc/s3hpc
]])
whatis("Name: s3hpc")
whatis("Version: @VERSION@")
whatis("Description: S3 gateway, FUSE mount and benchmarks for POSIX parallel file systems; libs3 drop-in")

local root = "@PREFIX@"
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("LD_LIBRARY_PATH", pathJoin(root, "lib"))
prepend_path("LIBRARY_PATH", pathJoin(root, "lib"))
prepend_path("CPATH", pathJoin(root, "include"))
setenv("S3HPC_ROOT", root)
