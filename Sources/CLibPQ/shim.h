#ifndef GATEHOUSE_CLIBPQ_SHIM_H
#define GATEHOUSE_CLIBPQ_SHIM_H

/* libpq (Debian libpq5; headers from libpq-dev under /usr/include/postgresql), loaded at run time
 * by the PostgreSQL engine only: a gateway on SQLite never maps libpq nor what it needs (Kerberos,
 * LDAP, SASL, GnuTLS…: about 3 MiB of resident pages at idle, measured with commit 60bbb1a).
 *
 * This header gives only the types: the table of the functions the engine calls. It is filled
 * and kept in Swift (`LibPQ`), never in a static here: a header's static is one copy per object
 * file, and an optimised build folded the copies nothing wrote to into null pointers (the release
 * gateway's connection pool then never closed nor reused a connection). */

#include <postgresql/libpq-fe.h>

struct gatehouse_pq_functions {
    PGconn * (*connectdbParams)(const char *const *keywords, const char *const *values, int expand_dbname);
    ConnStatusType (*status)(const PGconn *conn);
    char * (*errorMessage)(const PGconn *conn);
    void (*finish)(PGconn *conn);
    PQnoticeProcessor (*setNoticeProcessor)(PGconn *conn, PQnoticeProcessor proc, void *arg);
    PGTransactionStatusType (*transactionStatus)(const PGconn *conn);
    int (*socket)(const PGconn *conn);
    int (*sendQueryParams)(PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat);
    int (*sendQuery)(PGconn *conn, const char *query);
    int (*consumeInput)(PGconn *conn);
    int (*isBusy)(PGconn *conn);
    PGresult * (*getResult)(PGconn *conn);
    ExecStatusType (*resultStatus)(const PGresult *res);
    char * (*resultErrorMessage)(const PGresult *res);
    char * (*resultErrorField)(const PGresult *res, int fieldcode);
    int (*ntuples)(const PGresult *res);
    int (*nfields)(const PGresult *res);
    char * (*getvalue)(const PGresult *res, int tup_num, int field_num);
    int (*getlength)(const PGresult *res, int tup_num, int field_num);
    int (*getisnull)(const PGresult *res, int tup_num, int field_num);
    char * (*cmdTuples)(PGresult *res);
    void (*clear)(PGresult *res);
    PGnotify * (*notifies)(PGconn *conn);
    void (*freemem)(void *ptr);
};

#endif
