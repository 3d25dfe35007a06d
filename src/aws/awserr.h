/* awserr: the typed error of one AWS call, and the single place where AWS
 * errors become -errno. Parsing of the JSON error envelope lives here too.
 *
 * Mapping (awserr_to_errno):
 *   ConditionalCheckFailedException, TransactionCanceled(cond) -> -ECANCELED
 *   ResourceNotFoundException (table missing)                 -> -ENXIO
 *   ResourceInUseException (table exists / busy)              -> -EEXIST
 *   AccessDenied, UnrecognizedClient, InvalidSignature,
 *   MissingAuthenticationToken, IncompleteSignature,
 *   ExpiredToken, InvalidClientTokenId, SignatureDoesNotMatch -> -EACCES
 *   ValidationException, SerializationException, 4xx other    -> -EINVAL
 *   ItemCollectionSizeLimitExceededException                  -> -ENOSPC
 *   Throttling*, ProvisionedThroughputExceeded,
 *   RequestLimitExceeded, LimitExceeded                       -> -EAGAIN
 *   5xx, InternalServerError, ServiceUnavailable              -> -EIO
 *   transport failures keep their own -errno (see http.h)
 *   a 2xx/4xx/5xx body that is not the expected JSON          -> -EPROTO */
#ifndef LOCKFS_AWSERR_H
#define LOCKFS_AWSERR_H

#include <stdbool.h>
#include <stddef.h>

struct aws_error {
	long http_status; /* 0 when no HTTP answer arrived */
	int transport;	  /* -errno of a transport failure, else 0 */
	char type[96];	  /* short exception name, e.g. "ThrottlingException" */
	char message[512]; /* service message, may be empty; room for the
			    * credential chain's reason of each provider */
};

void awserr_clear(struct aws_error *e);
/* Fills e from an error answer: status plus a JSON body with "__type" (the
 * part after '#' is kept) and "message" or "Message". A body that is not JSON
 * leaves type empty and puts a bounded, escaped excerpt in message. */
void awserr_from_json(struct aws_error *e, long http_status, const char *body,
		      size_t len);
void awserr_set(struct aws_error *e, long http_status, const char *type,
		const char *message);
void awserr_set_transport(struct aws_error *e, int neg_errno);
/* The same with the words of the failure (http_error_text) as the message
 * instead of strerror; why NULL or "": strerror. */
void awserr_set_transport_why(struct aws_error *e, int neg_errno,
			      const char *why);
bool awserr_is_throttle(const struct aws_error *e);
bool awserr_is_retryable(const struct aws_error *e);
bool awserr_is_condition_failed(const struct aws_error *e);
int awserr_to_errno(const struct aws_error *e);
/* One line for logs and mount-time errors, e.g.
 * "ResourceNotFoundException (HTTP 400): Cannot do operations on a
 * non-existent table". Never contains credentials. Returns out. */
const char *awserr_format(const struct aws_error *e, char *out, size_t outlen);

#endif
