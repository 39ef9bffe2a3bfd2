//! With the `mpi` feature: compile the C shim (src/mpi_shim.c) with the MPI compiler wrapper and
//! link the MPI library the wrapper names. Without the feature this does nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "mpi")]
    mpi::build();
}

#[cfg(feature = "mpi")]
mod mpi {
    use std::process::Command;

    pub fn build() {
        println!("cargo:rerun-if-changed=src/mpi_shim.c");
        println!("cargo:rerun-if-env-changed=MPICC");
        let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
        // OpenMPI: --showme:link; MPICH / Intel MPI: -link_info.
        let link = ["--showme:link", "-link_info"]
            .iter()
            .find_map(|flag| {
                let out = Command::new(&mpicc).arg(flag).output().ok()?;
                out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
            })
            .unwrap_or_else(|| {
                panic!(
                    "feature `mpi`: cannot run `{mpicc} --showme:link` or `{mpicc} -link_info`; install an MPI \
                     (Debian: openmpi-bin libopenmpi-dev) or set MPICC to its compiler wrapper"
                )
            });
        cc::Build::new().compiler(&mpicc).file("src/mpi_shim.c").warnings(true).compile("s3hpc_mpi_shim");
        for tok in link.split_whitespace() {
            if let Some(dir) = tok.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
            } else if let Some(lib) = tok.strip_prefix("-l") {
                println!("cargo:rustc-link-lib={lib}");
            } else if tok.starts_with("-Wl,") {
                println!("cargo:rustc-link-arg={tok}");
            }
        }
    }
}
