#ifndef GATEHOUSE_CLIBPQ_SHIM_H
#define GATEHOUSE_CLIBPQ_SHIM_H

/* libpq from Debian libpq-dev: the header lives under /usr/include/postgresql. */
#include <postgresql/libpq-fe.h>

#endif
