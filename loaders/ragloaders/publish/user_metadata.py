"""What of the user's a build keeps as it was: the owner, mode and attributes of their folders, and their mounts.

- **Folders.** Every folder recreated for the user's entries, the target included, gets the old one's owner, mode
  and extended attributes (and times, below the target). An attribute the process may not set is fine when the
  new folder already has that value; anything else that cannot be kept is one OutputFolderError naming the
  folder, and the build is not swapped in.
- **Mounts.** `other_devices` names the entries of a folder that are mount points (the kernel's list, bind mounts
  included) or on another filesystem; ragloaders moves no mount, so output_folder.py refuses such a target, and
  one that is a mount point itself.
"""

from __future__ import annotations

import errno
import os
import re
import stat

from ..core.deep_folders import walk
from ..core.output_target import OutputFolderError, is_inside


def keep_metadata(source: str, destination: str, *, times: bool) -> None:
    """Give `destination` the owner, mode, extended attributes (and, with `times`, times) of `source`: a folder
    of the user's that a build recreates stays as it was. What cannot be kept is refused, not changed silently."""
    before, now = os.lstat(source), os.lstat(destination)
    try:
        if (before.st_uid, before.st_gid) != (now.st_uid, now.st_gid):
            os.chown(destination, before.st_uid, before.st_gid, follow_symlinks=False)
        os.chmod(destination, stat.S_IMODE(before.st_mode))
        for name in _xattr_names(source):
            _set_xattr(destination, name, os.getxattr(source, name, follow_symlinks=False))
        if times:
            os.utime(destination, ns=(before.st_atime_ns, before.st_mtime_ns), follow_symlinks=False)
    except PermissionError as e:
        raise OutputFolderError(f"{source}: ragloaders cannot keep its owner, mode or attributes on the folder "
                                f"it builds ({e.strerror}); the build is not swapped in") from e


def _set_xattr(path: str, name: str, value: bytes) -> None:
    """Set an attribute; one the process may not set (a security label, say) is fine when it already has the
    value (the new folder inherited it), else PermissionError: it cannot be kept."""
    try:
        os.setxattr(path, name, value, follow_symlinks=False)
    except OSError as e:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == value:
                return
        except OSError:
            pass
        raise PermissionError(e.errno, f"cannot set the attribute {name}: {e.strerror}", path) from e


def _xattr_names(path: str) -> list[str]:
    try:
        return os.listxattr(path, follow_symlinks=False)
    except (OSError, AttributeError) as e:  # a filesystem without extended attributes has none to keep
        if isinstance(e, AttributeError) or e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return []
        raise


def mount_points() -> list[str]:
    """Every mount point the kernel lists (/proc/self/mountinfo; bind mounts of the same filesystem included,
    which st_dev cannot tell apart); none where there is no such file."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    unescape = re.compile(r"\\([0-7]{3})")
    return [unescape.sub(lambda m: chr(int(m.group(1), 8)), line.split(" ")[4]) for line in lines
            if len(line.split(" ")) > 4]


def other_devices(folder: str) -> list[str]:
    """Entries under `folder` ('/' paths) on another filesystem than the folder itself, or mount points (a bind
    mount too): a build neither enters nor moves them."""
    inner = [os.path.relpath(point, folder).replace(os.sep, "/") for point in mount_points()
             if point != folder and is_inside(point, folder)]
    if inner:
        return sorted(inner)
    device, found = os.lstat(folder).st_dev, []
    for root, folders, files in walk(folder):
        for name in sorted(folders + files):
            path = os.path.join(root, name)
            try:
                if os.lstat(path).st_dev != device:
                    found.append(os.path.relpath(path, folder).replace(os.sep, "/"))
            except OSError:
                continue
        folders[:] = [f for f in folders if same_device(os.path.join(root, f), device)]
    return found


def same_device(path: str, device: int) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_dev == device
