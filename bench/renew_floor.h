/* renew_floor: "cycle renew", the renewal floor of bench/scale.sh (see
 * renew_floor.c). */
#ifndef LOCKFS_BENCH_RENEW_FLOOR_H
#define LOCKFS_BENCH_RENEW_FLOOR_H

/* argv: cycle renew ENDPOINT TABLE KEYS THREADS SECONDS. Exit status. */
int renew_floor_main(int argc, char **argv);

#endif
