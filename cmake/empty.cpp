// The source of ra_library_pch, which owns the precompiled header the library modules share.
