//! Object ACL records: the document the S3 authorization layer keeps for an object whose ACL is
//! not the default (PutObjectAcl, or an ACL given at upload into a bucket with ACLs enabled).
//!
//! It is an extended attribute of the object's file of its own (`user.s3hpc.acl`), next to the
//! metadata record: the inode number it was written for, then the document. A new PUT publishes
//! a new file, so an overwrite starts with no ACL record (the default), as on S3; an older
//! version keeps its record (versions are hard links of the same inode); a copy made by a POSIX
//! tool that preserves xattrs carries a record for another inode, which is ignored. Directory
//! objects (`key/`) and file systems without extended attributes keep no ACL records.

use super::*;

/// The attribute holding an object's ACL record.
const ACL_XATTR: &[u8] = b"user.s3hpc.acl\0";

impl Inner {
    /// The object's ACL record, if it has one (`NoSuchKey` if there is no such object).
    pub(crate) fn object_acl(&self, bdir: &Path, bucket: &str, key: &str, kp: &KeyPath) -> Result<Option<Vec<u8>>> {
        let o = self.open_object(bdir, bucket, key, kp)?;
        let Content::File(f) = &o.content else { return Ok(None) };
        let ino = f.metadata()?.ino();
        let v = match sys::fget_xattr_named(f, ACL_XATTR) {
            Ok(v) => v,
            Err(e) if sys::is_unsupported(&e) => None,
            Err(e) => return Err(e.into()),
        };
        Ok(v.filter(|v| v.len() >= 8 && v[..8] == ino.to_le_bytes()).map(|v| v[8..].to_vec()))
    }

    /// Set (`Some`) or remove (`None`) the object's ACL record.
    pub(crate) fn set_object_acl(
        &self,
        bdir: &Path,
        bucket: &str,
        key: &str,
        kp: &KeyPath,
        doc: Option<&[u8]>,
    ) -> Result<()> {
        let o = self.open_object(bdir, bucket, key, kp)?;
        let Content::File(f) = &o.content else {
            return match doc {
                None => Ok(()),
                Some(_) => Err(Error::not_implemented("ACLs on directory objects are not supported by s3hpc")),
            };
        };
        let r = match doc {
            None => sys::fremove_xattr_named(f, ACL_XATTR),
            Some(d) => {
                let mut v = f.metadata()?.ino().to_le_bytes().to_vec();
                v.extend_from_slice(d);
                sys::fset_xattr_named(f, ACL_XATTR, &v)
            }
        };
        match r {
            Err(e) if sys::is_unsupported(&e) => match doc {
                None => Ok(()),
                Some(_) => Err(Error::not_implemented(
                    "object ACLs need extended attributes, which the file system under this bucket does not offer",
                )),
            },
            r => Ok(r?),
        }
    }
}
