/* A stand-in for libgpuhook.so in the record tests: preloading it changes nothing, so the
   tests check record's own behaviour (environment, exit codes, signals) without a GPU. */
int gpuhook_record_probe(void) { return 0; }
