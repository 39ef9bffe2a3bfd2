fn main() {
    // Programs linked against libs3 record this soname; ours must match to be a drop-in.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libs3.so.4");
    println!("cargo:rerun-if-changed=build.rs");
}
