"""Prints where `make install-python` puts the package for PREFIX (argv[1]).

Debian's python3 looks in /usr/lib/python3/dist-packages (PREFIX=/usr) and
/usr/local/lib/python3.X/dist-packages (PREFIX=/usr/local); other prefixes get
PREFIX/lib/python3.X/dist-packages, to be put on PYTHONPATH. A Python without
Debian's schemes uses its own posix_prefix layout (PREFIX/lib/python3.X/site-packages).
"""
import sys
import sysconfig

prefix = sys.argv[1]
if "deb_system" in sysconfig.get_scheme_names():
    if prefix.rstrip("/") == "/usr":
        print("/usr/lib/python3/dist-packages")
    else:
        print("%s/lib/python%d.%d/dist-packages" % ((prefix.rstrip("/"),) + sys.version_info[:2]))
else:
    print(sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix, "platbase": prefix}))
