#ifndef GATEHOUSE_CLIBPQ_SHIM_H
#define GATEHOUSE_CLIBPQ_SHIM_H

/* libpq (Debian libpq5; headers from libpq-dev under /usr/include/postgresql), loaded at run time
 * by the PostgreSQL engine only: a gateway on SQLite never maps libpq nor what it needs (Kerberos,
 * LDAP, SASL, GnuTLS…: about 3 MiB of resident pages at idle, measured in session 8). The engine
 * calls gatehouse_pq_load() before its first connection and then the gatehouse_PQ* functions, each
 * the libpq function of the same name through a pointer resolved once. */

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
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
};

struct gatehouse_pq_library {
    pthread_once_t once;
    int loaded;
    char error[256];
    struct gatehouse_pq_functions call;
};

static inline struct gatehouse_pq_library *gatehouse_pq_library(void) {
    static struct gatehouse_pq_library library = { PTHREAD_ONCE_INIT, 0, "", { 0 } };
    return &library;
}

static inline void gatehouse_pq_open(void) {
    struct gatehouse_pq_library *library = gatehouse_pq_library();
    void *handle = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(library->error, sizeof library->error, "libpq.so.5 could not be loaded: %s", why ? why : "unknown error");
        return;
    }
    struct gatehouse_pq_functions *call = &library->call;
    if ((*(void **)&call->connectdbParams = dlsym(handle, "PQconnectdbParams")) == NULL) goto missing;
    if ((*(void **)&call->status = dlsym(handle, "PQstatus")) == NULL) goto missing;
    if ((*(void **)&call->errorMessage = dlsym(handle, "PQerrorMessage")) == NULL) goto missing;
    if ((*(void **)&call->finish = dlsym(handle, "PQfinish")) == NULL) goto missing;
    if ((*(void **)&call->setNoticeProcessor = dlsym(handle, "PQsetNoticeProcessor")) == NULL) goto missing;
    if ((*(void **)&call->transactionStatus = dlsym(handle, "PQtransactionStatus")) == NULL) goto missing;
    if ((*(void **)&call->socket = dlsym(handle, "PQsocket")) == NULL) goto missing;
    if ((*(void **)&call->sendQueryParams = dlsym(handle, "PQsendQueryParams")) == NULL) goto missing;
    if ((*(void **)&call->sendQuery = dlsym(handle, "PQsendQuery")) == NULL) goto missing;
    if ((*(void **)&call->consumeInput = dlsym(handle, "PQconsumeInput")) == NULL) goto missing;
    if ((*(void **)&call->isBusy = dlsym(handle, "PQisBusy")) == NULL) goto missing;
    if ((*(void **)&call->getResult = dlsym(handle, "PQgetResult")) == NULL) goto missing;
    if ((*(void **)&call->resultStatus = dlsym(handle, "PQresultStatus")) == NULL) goto missing;
    if ((*(void **)&call->resultErrorMessage = dlsym(handle, "PQresultErrorMessage")) == NULL) goto missing;
    if ((*(void **)&call->resultErrorField = dlsym(handle, "PQresultErrorField")) == NULL) goto missing;
    if ((*(void **)&call->ntuples = dlsym(handle, "PQntuples")) == NULL) goto missing;
    if ((*(void **)&call->nfields = dlsym(handle, "PQnfields")) == NULL) goto missing;
    if ((*(void **)&call->getvalue = dlsym(handle, "PQgetvalue")) == NULL) goto missing;
    if ((*(void **)&call->getlength = dlsym(handle, "PQgetlength")) == NULL) goto missing;
    if ((*(void **)&call->getisnull = dlsym(handle, "PQgetisnull")) == NULL) goto missing;
    if ((*(void **)&call->cmdTuples = dlsym(handle, "PQcmdTuples")) == NULL) goto missing;
    if ((*(void **)&call->clear = dlsym(handle, "PQclear")) == NULL) goto missing;
    library->loaded = 1;
    return;
missing:
    snprintf(library->error, sizeof library->error, "libpq.so.5 lacks a function the gateway needs");
}

/* NULL once libpq is loaded (at most one attempt per process), else why it is not. */
static inline const char *gatehouse_pq_load(void) {
    struct gatehouse_pq_library *library = gatehouse_pq_library();
    pthread_once(&library->once, gatehouse_pq_open);
    return library->loaded ? NULL : library->error;
}

static inline PGconn * gatehouse_PQconnectdbParams(const char *const *keywords, const char *const *values, int expand_dbname) { return gatehouse_pq_library()->call.connectdbParams(keywords, values, expand_dbname); }
static inline ConnStatusType gatehouse_PQstatus(const PGconn *conn) { return gatehouse_pq_library()->call.status(conn); }
static inline char * gatehouse_PQerrorMessage(const PGconn *conn) { return gatehouse_pq_library()->call.errorMessage(conn); }
static inline void gatehouse_PQfinish(PGconn *conn) { gatehouse_pq_library()->call.finish(conn); }
static inline PQnoticeProcessor gatehouse_PQsetNoticeProcessor(PGconn *conn, PQnoticeProcessor proc, void *arg) { return gatehouse_pq_library()->call.setNoticeProcessor(conn, proc, arg); }
static inline PGTransactionStatusType gatehouse_PQtransactionStatus(const PGconn *conn) { return gatehouse_pq_library()->call.transactionStatus(conn); }
static inline int gatehouse_PQsocket(const PGconn *conn) { return gatehouse_pq_library()->call.socket(conn); }
static inline int gatehouse_PQsendQueryParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat) { return gatehouse_pq_library()->call.sendQueryParams(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat); }
static inline int gatehouse_PQsendQuery(PGconn *conn, const char *query) { return gatehouse_pq_library()->call.sendQuery(conn, query); }
static inline int gatehouse_PQconsumeInput(PGconn *conn) { return gatehouse_pq_library()->call.consumeInput(conn); }
static inline int gatehouse_PQisBusy(PGconn *conn) { return gatehouse_pq_library()->call.isBusy(conn); }
static inline PGresult * gatehouse_PQgetResult(PGconn *conn) { return gatehouse_pq_library()->call.getResult(conn); }
static inline ExecStatusType gatehouse_PQresultStatus(const PGresult *res) { return gatehouse_pq_library()->call.resultStatus(res); }
static inline char * gatehouse_PQresultErrorMessage(const PGresult *res) { return gatehouse_pq_library()->call.resultErrorMessage(res); }
static inline char * gatehouse_PQresultErrorField(const PGresult *res, int fieldcode) { return gatehouse_pq_library()->call.resultErrorField(res, fieldcode); }
static inline int gatehouse_PQntuples(const PGresult *res) { return gatehouse_pq_library()->call.ntuples(res); }
static inline int gatehouse_PQnfields(const PGresult *res) { return gatehouse_pq_library()->call.nfields(res); }
static inline char * gatehouse_PQgetvalue(const PGresult *res, int tup_num, int field_num) { return gatehouse_pq_library()->call.getvalue(res, tup_num, field_num); }
static inline int gatehouse_PQgetlength(const PGresult *res, int tup_num, int field_num) { return gatehouse_pq_library()->call.getlength(res, tup_num, field_num); }
static inline int gatehouse_PQgetisnull(const PGresult *res, int tup_num, int field_num) { return gatehouse_pq_library()->call.getisnull(res, tup_num, field_num); }
static inline char * gatehouse_PQcmdTuples(PGresult *res) { return gatehouse_pq_library()->call.cmdTuples(res); }
static inline void gatehouse_PQclear(PGresult *res) { gatehouse_pq_library()->call.clear(res); }

#endif
