// Placeholder translation unit for an empty kernels/ folder.
